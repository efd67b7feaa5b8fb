"""Signatures of the numpy-named primitives, for editors and type
checkers only: weft/__init__.py makes the real functions from weft_ops.h's
table at import (weft._terms.PRIMITIVES), and tests/test_scalar.py checks
that this list names exactly those.  Each takes scalar terms or numbers
and gives a scalar term; given an array term it is mapped over it."""

from typing import Any

Term = Any


def add(x: Term, y: Term) -> Term:
    """weft primitive add (NUM)."""
    ...


def subtract(x: Term, y: Term) -> Term:
    """weft primitive sub (NUM)."""
    ...


def multiply(x: Term, y: Term) -> Term:
    """weft primitive mul (NUM)."""
    ...


def negative(x: Term) -> Term:
    """weft primitive neg (NUM)."""
    ...


def absolute(x: Term) -> Term:
    """weft primitive abs (NUM)."""
    ...


def sign(x: Term) -> Term:
    """weft primitive signum (NUM)."""
    ...


def minimum(x: Term, y: Term) -> Term:
    """weft primitive min (ORD)."""
    ...


def maximum(x: Term, y: Term) -> Term:
    """weft primitive max (ORD)."""
    ...


def quot(x: Term, y: Term) -> Term:
    """weft primitive quot (INT)."""
    ...


def rem(x: Term, y: Term) -> Term:
    """weft primitive rem (INT)."""
    ...


def floor_divide(x: Term, y: Term) -> Term:
    """weft primitive idiv (INT)."""
    ...


def mod(x: Term, y: Term) -> Term:
    """weft primitive mod (INT)."""
    ...


def bitwise_and(x: Term, y: Term) -> Term:
    """weft primitive band (LOGIC)."""
    ...


def bitwise_or(x: Term, y: Term) -> Term:
    """weft primitive bor (LOGIC)."""
    ...


def bitwise_xor(x: Term, y: Term) -> Term:
    """weft primitive bxor (LOGIC)."""
    ...


def invert(x: Term) -> Term:
    """weft primitive bnot (INT)."""
    ...


def left_shift(x: Term, y: Term) -> Term:
    """weft primitive shl (SHIFT)."""
    ...


def right_shift(x: Term, y: Term) -> Term:
    """weft primitive shr (SHIFT)."""
    ...


def rotl(x: Term, y: Term) -> Term:
    """weft primitive rotl (SHIFT)."""
    ...


def rotr(x: Term, y: Term) -> Term:
    """weft primitive rotr (SHIFT)."""
    ...


def popcount(x: Term) -> Term:
    """weft primitive popcount (BITS)."""
    ...


def clz(x: Term) -> Term:
    """weft primitive clz (BITS)."""
    ...


def ctz(x: Term) -> Term:
    """weft primitive ctz (BITS)."""
    ...


def true_divide(x: Term, y: Term) -> Term:
    """weft primitive fdiv (FLT)."""
    ...


def power(x: Term, y: Term) -> Term:
    """weft primitive pow (FLT)."""
    ...


def arctan2(x: Term, y: Term) -> Term:
    """weft primitive atan2 (FLT)."""
    ...


def exp(x: Term) -> Term:
    """weft primitive exp (FLT)."""
    ...


def log(x: Term) -> Term:
    """weft primitive log (FLT)."""
    ...


def sqrt(x: Term) -> Term:
    """weft primitive sqrt (FLT)."""
    ...


def sin(x: Term) -> Term:
    """weft primitive sin (FLT)."""
    ...


def cos(x: Term) -> Term:
    """weft primitive cos (FLT)."""
    ...


def tan(x: Term) -> Term:
    """weft primitive tan (FLT)."""
    ...


def arcsin(x: Term) -> Term:
    """weft primitive asin (FLT)."""
    ...


def arccos(x: Term) -> Term:
    """weft primitive acos (FLT)."""
    ...


def arctan(x: Term) -> Term:
    """weft primitive atan (FLT)."""
    ...


def sinh(x: Term) -> Term:
    """weft primitive sinh (FLT)."""
    ...


def cosh(x: Term) -> Term:
    """weft primitive cosh (FLT)."""
    ...


def tanh(x: Term) -> Term:
    """weft primitive tanh (FLT)."""
    ...


def arcsinh(x: Term) -> Term:
    """weft primitive asinh (FLT)."""
    ...


def arccosh(x: Term) -> Term:
    """weft primitive acosh (FLT)."""
    ...


def arctanh(x: Term) -> Term:
    """weft primitive atanh (FLT)."""
    ...


def expm1(x: Term) -> Term:
    """weft primitive expm1 (FLT)."""
    ...


def log1p(x: Term) -> Term:
    """weft primitive log1p (FLT)."""
    ...


def isnan(x: Term) -> Term:
    """weft primitive isnan (FPRED)."""
    ...


def isinf(x: Term) -> Term:
    """weft primitive isinf (FPRED)."""
    ...


def less(x: Term, y: Term) -> Term:
    """weft primitive lt (CMP)."""
    ...


def less_equal(x: Term, y: Term) -> Term:
    """weft primitive le (CMP)."""
    ...


def greater(x: Term, y: Term) -> Term:
    """weft primitive gt (CMP)."""
    ...


def greater_equal(x: Term, y: Term) -> Term:
    """weft primitive ge (CMP)."""
    ...


def equal(x: Term, y: Term) -> Term:
    """weft primitive eq (CMP)."""
    ...


def not_equal(x: Term, y: Term) -> Term:
    """weft primitive ne (CMP)."""
    ...


def logical_and(x: Term, y: Term) -> Term:
    """weft primitive and (BOOL)."""
    ...


def logical_or(x: Term, y: Term) -> Term:
    """weft primitive or (BOOL)."""
    ...


def logical_not(x: Term) -> Term:
    """weft primitive not (BOOL)."""
    ...
