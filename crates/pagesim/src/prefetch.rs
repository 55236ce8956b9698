//! A software prefetch: asks the CPU to bring a value's cache line in while the code works
//! on something else. The hot loops over pages (the cache-only LRU, the trace scan, a
//! replay's next accesses) look their pages' entries up a few references ahead: a cache
//! miss costs far more than a reference's work once the arrays outgrow the CPU's caches.
//! A hint only: it changes no result.

/// Asks for the cache line of `x` (into every cache level).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    mem_prefetch::prefetch_read_data::<T, 3>(x);
}
