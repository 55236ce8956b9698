//! Dropping a file's pages: truncate(2) to 0, unlink.
//!
//! Models mm/truncate.c `truncate_inode_pages_range` for the whole file: every folio is
//! unmapped, a dirty one is cleaned without being written (`folio_cancel_dirty`, the
//! dirty accounting undone), and it leaves the page cache and the LRU, its frame freed;
//! shadow entries go too (no refault follows a truncate). The caller (engine/
//! page_writeback.rs `file_sync_step`) first waits for the writeback in flight, as
//! `truncate_inode_pages` waits on each folio under writeback; folios whose read is in
//! flight are waited for here. The inode, clean, leaves its flusher's lists.
//!
//! The file's size becomes 0: reads find nothing until writes or appends grow it again
//! within its extent (an unlinked file that is created again in the same place). A file
//! that a step truncates cannot be mapped by a region (the scenario is refused), since a
//! fault past the end (SIGBUS) is not modelled.

use crate::engine::Sim;
use crate::ids::{FileId, Pfn};
use crate::mm::{pg, LruList, Mm, Owner};

impl Sim {
    /// `truncate_inode_pages` of file `fi` to 0. Returns a folio whose read is in flight,
    /// to wait for before calling again; `None` when the file has no page left.
    pub(crate) fn truncate_inode_pages(&mut self, fi: FileId) -> Option<Pfn> {
        let nr_pages = self.pc.files[fi].nr_pages;
        let mut i = 0;
        while i < nr_pages {
            let Some(f) = self.pc.files[fi].frame(i) else {
                i += 1;
                continue;
            };
            let (first, nr) = (self.mm.frames.index[f] as u64, self.mm.frames.nr_pages(f));
            if self.mm.frames.test(f, pg::LOCKED | pg::WRITEBACK) {
                return Some(f);
            }
            self.try_to_unmap(f);
            if self.mm.frames.test(f, pg::DIRTY) {
                // folio_cancel_dirty: clean, unwritten.
                self.folio_account_cleaned(f, fi);
            }
            let l = self.mm.frames.lru[f];
            if LruList::from_u8(l).is_some() {
                let m = self.mm.frames.memcg[f] as usize;
                let Mm { memcgs, frames, .. } = &mut self.mm;
                memcgs[m].lru.del(frames, f);
            }
            let nodes = self.pc.files[fi].delete_folio(first, nr, f, None);
            self.workingset_update_nodes(fi, nodes);
            self.mm.frames.set_owner(f, Owner::None, 0);
            self.mm.free_frame(f);
            i = first + nr;
        }
        let listed = self.pc.files[fi].forget_shadows();
        self.shadow_nodes_forget(listed);
        self.pc.files[fi].writeback_index = 0;
        self.pc.files[fi].i_size = 0;
        if self.wb.inodes[fi.idx()].dirty {
            let wb = self.inode_to_wb(fi);
            self.wb.inode_clean(wb, fi);
        }
        None
    }
}
