//! Swap-in readahead: which swap slots (or which pages of the faulting VMA) to read
//! together with the one that faulted.
//!
//! Models the decisions of mm/swap_state.c's readahead: which window `swapin_readahead`
//! reads (`swap_cluster_readahead`'s aligned block sized by `swapin_nr_pages`, or
//! `swap_vma_readahead`'s PTE range) and what a swap-cache hit on a readahead page teaches
//! the policy. The reading itself and the hit accounting (`swap_cache_get_folio`:
//! PG_readahead test-and-cleared, `swap_ra_hit`) are engine/swap_state.rs.
//!
//! A policy is one file implementing [`SwapReadahead`]; [`REGISTRY`] lists them and the
//! engine dispatches through the closed enum [`SwapRa`]. Per-policy state (global hit
//! counter, per-VMA readahead info) lives inside the policy.
//!
//! The common reading code (engine/swap_state.rs `swapin_readahead`) then, for each slot of the window in ascending order,
//! skips free or (on ≥4.11 profiles) unreferenced slots and slots already in the swap
//! cache, reads the rest under one block plug, flags non-target pages PG_readahead and
//! counts them in `swap_ra`; the target is read last if it was not in the window.

mod adaptive;
mod cluster;
mod none;
mod vma;
mod vma_2012;

use crate::ids::VmaId;
pub use adaptive::{swapin_nr_pages, Adaptive};
pub use cluster::BlindCluster;
pub use none::NoReadahead;
pub use vma::Vma;
pub use vma_2012::Vma2012;

/// What a swap fault is in: an anonymous VMA, or a shmem object (whose faults have no
/// VMA-based readahead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOwner {
    Anon(VmaId),
    /// The shmem object's index in `Mm::shmem`.
    Shmem(u32),
}

/// What the faulting context is.
#[derive(Clone, Copy, Debug)]
pub struct FaultCtx {
    pub owner: FaultOwner,
    /// Page index of the fault in the VMA or object.
    pub index: u32,
    /// Pages in the VMA (anon).
    pub vma_pages: u32,
    /// Slot of the faulting entry, and the area's slot count (`si->max`).
    pub slot: u32,
    pub area_slots: u32,
    /// vm.page-cluster.
    pub page_cluster: u32,
    /// A rotational swap area is active (`nr_rotate_swap`).
    pub rotational_swap: bool,
    /// /sys/kernel/mm/swap/vma_ra_enabled.
    pub vma_ra_enabled: bool,
    /// The profile disables VMA readahead while rotational swap is active (≥4.15).
    pub vma_ra_needs_nonrotational: bool,
    /// This fault is being retried after waiting for the page (`FAULT_FLAG_TRIED`).
    pub tried: bool,
}

impl FaultCtx {
    /// The anonymous VMA of the fault; `None` for a shmem fault.
    pub fn anon_vma(&self) -> Option<VmaId> {
        match self.owner {
            FaultOwner::Anon(v) => Some(v),
            FaultOwner::Shmem(_) => None,
        }
    }
}

/// The window a policy chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Read only the faulting page.
    Target,
    /// Read slots `lo..=hi` of the faulting entry's swap area (the target is among them
    /// or read after them).
    Slots { lo: u32, hi: u32 },
    /// Read the swap entries found in the PTEs of VMA pages `start..end`.
    VmaPages { start: u32, end: u32 },
}

/// A swap-in readahead policy.
pub trait SwapReadahead {
    /// Chooses the window for a swap-cache miss.
    fn window(&mut self, ctx: &FaultCtx) -> Window;
    /// A swap-cache lookup found the page; `was_readahead` says PG_readahead was set (and
    /// has now been cleared).
    fn on_cache_hit(&mut self, ctx: &FaultCtx, was_readahead: bool);
}

crate::registry::registry! {
    /// The closed set of policies, for dispatch without `Box<dyn>`.
    #[derive(Debug)]
    pub enum SwapRa: SwapReadahead {
        fn window(&mut self, ctx: &FaultCtx) -> Window;
        fn on_cache_hit(&mut self, ctx: &FaultCtx, was_readahead: bool);
    }

    /// Every swap-in readahead policy, by the name scenarios use.
    pub const REGISTRY = [
        None => "none", NoReadahead,
            "no readahead: read only the faulting page (as page_cluster = 0)",
            NoReadahead;
        Cluster => "cluster", BlindCluster,
            "blind cluster readahead (3.4-3.13): the whole 2^page_cluster aligned block of slots",
            BlindCluster;
        Vma2012 => "vma-2012", Vma2012,
            "Shaohua Li's Sep 2012 per-anon_vma miss counter: skip readahead after 100 net misses; \
             shmem keeps blind cluster readahead",
            Vma2012::default();
        Adaptive2012 => "adaptive-2012", Adaptive,
            "Hugh Dickins' Nov 2012 hit-rate detector as posted (seed 000 HughNew): swapin_nr_pages \
             without the half-window floor",
            Adaptive::nov_2012();
        Adaptive => "adaptive", Adaptive,
            "cluster readahead sized by recent readahead hits (3.14+, swapin_nr_pages; never below \
             half the previous window)",
            Adaptive::new();
        Vma => "vma", Vma,
            "VMA-based readahead (4.14+): window in the faulting VMA by fault direction; \
             shmem and rotational swap fall back to adaptive",
            Vma::new();
    ];
}

/// The naturally aligned block of `win` slots around `slot`, without the header and
/// clamped to the area (`swap_cluster_readahead`).
pub fn aligned_block(slot: u32, win: u32, area_slots: u32) -> Window {
    if win <= 1 {
        return Window::Target;
    }
    let mask = win - 1;
    let lo = (slot & !mask).max(1);
    let hi = (slot | mask).min(area_slots - 1);
    Window::Slots { lo, hi }
}
