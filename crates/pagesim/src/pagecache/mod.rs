//! File pages: what the page cache asks of the block layer on behalf of read(2), mmap faults
//! and fadvise(2).
//!
//! Only the readahead *policies* live here so far (pure decisions over a read-only view of the
//! page cache); the page cache itself and the engine hookup come later.

pub mod readahead;
