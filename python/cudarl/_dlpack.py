"""DLPack in: the data pointer, device, dtype and shape of any object with __dlpack__ (a torch
or JAX array, a numpy array), read from its DLManagedTensor without a copy. The consumer's side of
the protocol: the capsule is marked used ("used_dltensor") and its deleter called when done."""
import ctypes


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", ctypes.CFUNCTYPE(None,
                                                          ctypes.POINTER(_DLManagedTensor)))]

_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype, _get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_rename = ctypes.pythonapi.PyCapsule_SetName
_rename.restype, _rename.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_UINT, _FLOAT = 1, 2


class View:
    """An array's memory as DLPack describes it: `ptr` (its first element), `shape`, `dtype`
    ("float32" or "uint8", else None), `device` ("cpu" or "cuda:N"), `contiguous`. Close it (or
    use it as a context manager) to hand the array back."""

    def __init__(self, obj):
        try:
            if hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] == KDL_CUDA:
                cap = obj.__dlpack__(stream=None)
            else:
                cap = obj.__dlpack__()
        except TypeError:
            cap = obj.__dlpack__()
        self._cap = cap
        self._m = ctypes.cast(_get(cap, b"dltensor"), ctypes.POINTER(_DLManagedTensor))
        _rename(cap, b"used_dltensor")
        t = self._m.contents.dl_tensor
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        d = t.dtype
        self.dtype = ("float32" if (d.code, d.bits, d.lanes) == (_FLOAT, 32, 1) else
                      "uint8" if (d.code, d.bits, d.lanes) == (_UINT, 8, 1) else None)
        kind = t.device.device_type
        self.device = ("cpu" if kind in (KDL_CPU, KDL_CUDA_HOST) else
                       "cuda:%d" % t.device.device_id if kind in (KDL_CUDA, KDL_CUDA_MANAGED)
                       else "dlpack device %d" % kind)
        self.ptr = (t.data or 0) + t.byte_offset
        contiguous = True
        if t.strides:
            want = 1
            for i in reversed(range(t.ndim)):
                if self.shape[i] != 1 and t.strides[i] != want:
                    contiguous = False
                want *= self.shape[i]
        self.contiguous = contiguous

    def close(self):
        if self._m is not None:
            deleter = self._m.contents.deleter
            if deleter:
                deleter(self._m)
            self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- producing: memory of the library's as DLPack capsules (cudarl.make_vec) ---------------

_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CODES = {"float32": (_FLOAT, 32), "uint8": (_UINT, 8), "int32": (0, 32), "bool": (6, 8)}
_live = {}  # address of a handed-out DLManagedTensor -> what it points to, until its deleter


@_DLManagedTensor._fields_[2][1]
def _deleter(m):
    _live.pop(ctypes.addressof(m.contents), None)


def capsule(ptr, shape, dtype, device, owner):
    """A "dltensor" capsule over `ptr` (not owned: `owner` keeps the memory alive; the view must
    not outlive it): C-contiguous `shape` of `dtype` ("float32", "uint8", "int32", "bool") on
    `device` (a CUDA index, or -1 for host memory)."""
    m = _DLManagedTensor()
    nd = len(shape)
    shp = (ctypes.c_int64 * nd)(*shape)
    t = m.dl_tensor
    t.data = ptr
    t.device.device_type, t.device.device_id = (KDL_CUDA, device) if device >= 0 else (KDL_CPU, 0)
    t.ndim = nd
    t.dtype.code, t.dtype.bits = _CODES[dtype]
    t.dtype.lanes = 1
    t.shape = shp
    t.strides = None
    t.byte_offset = 0
    m.deleter = _deleter
    _live[ctypes.addressof(m)] = (m, shp, owner)
    return _new(ctypes.addressof(m), b"dltensor", None)
