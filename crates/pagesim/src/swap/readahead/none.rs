//! No swap-in readahead (vm.page-cluster = 0): only the faulting page is read.

use super::{FaultCtx, SwapReadahead, Window};

#[derive(Debug, Default)]
pub struct NoReadahead;

impl SwapReadahead for NoReadahead {
    fn window(&mut self, _ctx: &FaultCtx) -> Window {
        Window::Target
    }
    fn on_cache_hit(&mut self, _ctx: &FaultCtx, _was_readahead: bool) {}
}
