//! What the filesystem adds to a replayed program's truncate, close and unlink.
//!
//! - `ext4_truncate`: a truncate to size 0 (ftruncate(fd, 0), an open with O_TRUNC of a file
//!   that existed) drops the file's pages (mm/truncate.c, engine/truncate.rs: dirty ones
//!   unwritten). On ext4 with `auto_da_alloc` (`Profile::ext4_auto_da_alloc`) it also marks
//!   the inode EXT4_STATE_DA_ALLOC_CLOSE: the program is probably rewriting the file in
//!   place, and ext4 wants its new blocks allocated and written soon.
//! - `ext4_release_file`: when an open file description of a marked file is released (its
//!   last descriptor closed), `ext4_alloc_da_blocks` calls `filemap_flush`: a WB_SYNC_NONE
//!   pass over the file's dirty pages, submitted by the closing task, not waited for
//!   (`SyncOp::StartWrite`, as sync_file_range's SYNC_FILE_RANGE_WRITE); the mark goes.
//! - `evict_inode`: an unlinked file that nothing has open any more loses its pages
//!   (`truncate_inode_pages_final`: writeback in flight waited for, dirty pages dropped
//!   unwritten).
//!
//! Not modelled: ext4's rename over an existing file, which flushes the renamed file the
//! same way (the capture does not follow rename), and the `noauto_da_alloc` mount option.

use crate::engine::Sim;
use crate::ids::{FileId, Tid};
use crate::pagecache::SyncOp;

impl Sim {
    /// `ext4_truncate` of file `fi` to size 0 by task `tid`: the truncate starts (the task
    /// runs it as a file call); the inode is marked for a flush at its next release.
    pub(crate) fn ext4_truncate(&mut self, tid: Tid, fi: FileId) {
        if self.profile.ext4_auto_da_alloc {
            self.pc.files[fi].da_alloc_close = true;
        }
        self.file_sync_begin(tid, fi, SyncOp::Truncate, false);
    }

    /// `ext4_release_file` for an open file description of `fi` that task `tid` released:
    /// a marked file's dirty pages are submitted for writeback. Returns whether a file call
    /// started.
    pub(crate) fn ext4_release_file(&mut self, tid: Tid, fi: FileId) -> bool {
        if !std::mem::take(&mut self.pc.files[fi].da_alloc_close) {
            return false;
        }
        self.file_sync_begin(tid, fi, SyncOp::StartWrite, false);
        true
    }

    /// `evict` of file `fi`, unlinked and no longer open, in task `tid` (the last `iput`):
    /// its pages go.
    pub(crate) fn evict_inode(&mut self, tid: Tid, fi: FileId) {
        self.pc.files[fi].da_alloc_close = false;
        self.file_sync_begin(tid, fi, SyncOp::Truncate, false);
    }
}
