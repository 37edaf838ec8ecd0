//! The few PMIx items the bootstrap uses, declared by hand from `pmix_common.h` / `pmix.h`
//! (PMIx 4.x; the layouts are those of the v2+ ABI that `libpmix.so.2` keeps), and the library
//! loaded at run time: nothing links against libpmix, which only has to be present when a
//! program is started by a PMIx launcher.

use std::os::raw::{c_char, c_int, c_void};

/// `pmix_status_t`.
pub type Status = c_int;
/// `PMIX_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `PMIX_EVENT_ACTION_COMPLETE`: what an event handler returns through its callback.
pub const EVENT_ACTION_COMPLETE: Status = -334;

/// Events meaning "a process of the job ended" or "the server is gone", which the bootstrap
/// watches (`PMIX_ERR_PROC_REQUESTED_ABORT`, `PMIX_ERR_LOST_CONNECTION`,
/// `PMIX_PROC_TERMINATED`, `PMIX_ERR_PROC_TERM_WO_SYNC`, `PMIX_EVENT_PROC_TERMINATED`,
/// `PMIX_EVENT_NODE_DOWN`, `PMIX_ERR_PROC_KILLED_BY_CMD`, `PMIX_ERR_EXIT_NONZERO_TERM`).
pub const TERMINATION_EVENTS: [Status; 8] = [-8, -61, -111, -200, -201, -231, -400, -404];
/// `PMIX_ERR_TIMEOUT`.
pub const ERR_TIMEOUT: Status = -24;
/// `PMIX_ERR_LOST_CONNECTION`.
pub const ERR_LOST_CONNECTION: Status = -61;

/// `pmix_data_type_t` values used.
pub const BOOL: u16 = 1;
/// `PMIX_STRING`.
pub const STRING: u16 = 3;
/// `PMIX_INT`.
pub const INT: u16 = 6;
/// `PMIX_UINT32`.
pub const UINT32: u16 = 14;
/// `PMIX_PROC`.
pub const PROC: u16 = 22;
/// `PMIX_BYTE_OBJECT`.
pub const BYTE_OBJECT: u16 = 27;

/// `PMIX_GLOBAL` scope of a put: visible to every process of the job.
pub const SCOPE_GLOBAL: u8 = 3;
/// `PMIX_RANK_WILDCARD`: the job as a whole.
pub const RANK_WILDCARD: u32 = u32::MAX - 1;

/// `PMIX_MAX_NSLEN + 1`.
pub const NSPACE_BYTES: usize = 256;
/// `PMIX_MAX_KEYLEN + 1`.
pub const KEY_BYTES: usize = 512;

/// `pmix_proc_t`: a namespace and a rank (260 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Proc {
    /// NUL-terminated namespace.
    pub nspace: [c_char; NSPACE_BYTES],
    /// Rank in it.
    pub rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ByteObject {
    /// The bytes.
    pub bytes: *mut c_char,
    /// How many.
    pub size: usize,
}

/// `pmix_value_t`: a type tag and a 24-byte union (32 bytes, the data at offset 8).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Value {
    /// `pmix_data_type_t`.
    pub kind: u16,
    /// The union, read through the accessors below.
    pub data: [u64; 3],
}

/// `pmix_info_t`: a key, directives and a value (552 bytes).
#[repr(C)]
pub struct Info {
    /// NUL-terminated key.
    pub key: [c_char; KEY_BYTES],
    /// `pmix_info_directives_t`.
    pub flags: u32,
    /// The value.
    pub value: Value,
}

const _: () = assert!(std::mem::size_of::<Proc>() == 260);
const _: () = assert!(std::mem::size_of::<Value>() == 32);
const _: () = assert!(std::mem::size_of::<Info>() == 552);
const _: () = assert!(std::mem::offset_of!(Info, value) == 520);

impl Value {
    /// An all-zero value of type `kind`.
    pub fn new(kind: u16) -> Value {
        Value { kind, data: [0; 3] }
    }
}

impl Info {
    /// An info with `key` (shorter than [`KEY_BYTES`]) and `value`.
    pub fn new(key: &str, value: Value) -> Info {
        let mut k = [0 as c_char; KEY_BYTES];
        for (d, s) in k.iter_mut().zip(key.bytes().take(KEY_BYTES - 1)) {
            *d = s as c_char;
        }
        Info {
            key: k,
            flags: 0,
            value,
        }
    }

    /// A boolean info.
    pub fn flag(key: &str, on: bool) -> Info {
        let mut v = Value::new(BOOL);
        v.data[0] = on as u64;
        Info::new(key, v)
    }

    /// An `int` info.
    pub fn int(key: &str, x: i32) -> Info {
        let mut v = Value::new(INT);
        v.data[0] = x as u32 as u64;
        Info::new(key, v)
    }
}

/// `pmix_event_notification_cbfunc_fn_t`.
pub type EventDoneFn = unsafe extern "C" fn(
    status: Status,
    results: *mut Info,
    nresults: usize,
    cbfunc: *mut c_void,
    thiscbdata: *mut c_void,
    notification_cbdata: *mut c_void,
);

/// `pmix_notification_fn_t`.
pub type NotificationFn = unsafe extern "C" fn(
    evhdlr_registration_id: usize,
    status: Status,
    source: *const Proc,
    info: *mut Info,
    ninfo: usize,
    results: *mut Info,
    nresults: usize,
    cbfunc: Option<EventDoneFn>,
    cbdata: *mut c_void,
);

/// The entry points, resolved from the loaded library.
pub struct Api {
    /// Keeps the library mapped for as long as the pointers below are used.
    _lib: libloading::Library,
    /// `PMIx_Init(proc, info, ninfo)`.
    pub init: unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> Status,
    /// `PMIx_Finalize(info, ninfo)`.
    pub finalize: unsafe extern "C" fn(*const Info, usize) -> Status,
    /// `PMIx_Put(scope, key, value)`.
    pub put: unsafe extern "C" fn(u8, *const c_char, *mut Value) -> Status,
    /// `PMIx_Commit()`.
    pub commit: unsafe extern "C" fn() -> Status,
    /// `PMIx_Fence(procs, nprocs, info, ninfo)`.
    pub fence: unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> Status,
    /// `PMIx_Get(proc, key, info, ninfo, &value)`.
    pub get: unsafe extern "C" fn(
        *const Proc,
        *const c_char,
        *const Info,
        usize,
        *mut *mut Value,
    ) -> Status,
    /// `PMIx_Value_destruct(value)`: frees what a value points to (not the value).
    pub value_destruct: unsafe extern "C" fn(*mut Value),
    /// `PMIx_Register_event_handler(codes, ncodes, info, ninfo, handler, cbfunc, cbdata)`.
    pub register_event_handler: unsafe extern "C" fn(
        *mut Status,
        usize,
        *mut Info,
        usize,
        NotificationFn,
        *mut c_void,
        *mut c_void,
    ) -> Status,
    /// `PMIx_Error_string(status)`.
    pub error_string: unsafe extern "C" fn(Status) -> *const c_char,
}

/// The library names tried, in order (Debian's libpmix2 ships `libpmix.so.2`).
pub const LIBRARIES: [&str; 2] = ["libpmix.so.2", "libpmix.so"];

impl Api {
    /// Load libpmix and resolve the entry points.
    pub fn load() -> Result<Api, String> {
        let mut last = String::new();
        for name in LIBRARIES {
            // SAFETY: loading libpmix runs its initializers, which only set up the library.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Api::resolve(lib).map_err(|e| format!("{name}: {e}")),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!(
            "cannot load the PMIx library ({}): {last} (install libpmix2, or start the program with `unpinned run`)",
            LIBRARIES.join(" or ")
        ))
    }

    fn resolve(lib: libloading::Library) -> Result<Api, libloading::Error> {
        // SAFETY: each symbol is declared with the C signature of pmix.h (PMIx 2 and later);
        // the function pointers are copied out and kept no longer than `_lib`, stored with them.
        unsafe {
            Ok(Api {
                init: *lib.get(b"PMIx_Init\0")?,
                finalize: *lib.get(b"PMIx_Finalize\0")?,
                put: *lib.get(b"PMIx_Put\0")?,
                commit: *lib.get(b"PMIx_Commit\0")?,
                fence: *lib.get(b"PMIx_Fence\0")?,
                get: *lib.get(b"PMIx_Get\0")?,
                value_destruct: *lib.get(b"PMIx_Value_destruct\0")?,
                register_event_handler: *lib.get(b"PMIx_Register_event_handler\0")?,
                error_string: *lib.get(b"PMIx_Error_string\0")?,
                _lib: lib,
            })
        }
    }

    /// PMIx's name of `status`.
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string (or null).
        let p = unsafe { (self.error_string)(status) };
        if p.is_null() {
            return format!("PMIx status {status}");
        }
        // SAFETY: non-null, NUL-terminated, static.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        format!("{} ({status})", s.to_string_lossy())
    }
}
