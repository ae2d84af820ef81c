//! The one way to take a lock: a mutex poisoned by a panicking holder is taken anyway (every
//! guarded value here stays consistent between statements, so the data is still good).

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, recovering the guard from a poisoned mutex.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
