"""DLPack (filled in below)."""
def from_dlpack(x, context=None):
    raise NotImplementedError
def export(a, stream, max_version, dl_device, copy):
    raise NotImplementedError
def device_of(a):
    return (1, 0)
