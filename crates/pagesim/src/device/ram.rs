//! Models a RAM-backed block device (drivers/block/brd.c): no positioning cost, a memory
//! copy per byte, and a fixed per-request software cost of the block layer.

use super::IoDir;
use serde::Deserialize;

/// Parameters of the `ram` model.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RamParams {
    /// Device size in bytes (accepts units, e.g. "16GiB"). Default 64 GiB.
    #[serde(default = "default_capacity", deserialize_with = "crate::scenario::units::de_bytes")]
    pub capacity: u64,
    /// Per-request block-layer and driver cost, nanoseconds. Default 1000 (B.4: L0 about 1 us).
    #[serde(default = "default_request_ns")]
    pub request_ns: u64,
    /// Copy bandwidth, bytes per second. Default 8e9 (one core's memcpy).
    #[serde(default = "default_bandwidth")]
    pub bandwidth: u64,
}

fn default_capacity() -> u64 {
    64 << 30
}
fn default_request_ns() -> u64 {
    1_000
}
fn default_bandwidth() -> u64 {
    8_000_000_000
}

impl Default for RamParams {
    fn default() -> Self {
        RamParams { capacity: default_capacity(), request_ns: default_request_ns(), bandwidth: default_bandwidth() }
    }
}

#[derive(Clone, Debug)]
pub struct Ram {
    p: RamParams,
}

impl Ram {
    pub fn new(p: RamParams) -> Result<Self, String> {
        if p.bandwidth == 0 {
            return Err("bandwidth must be greater than 0".into());
        }
        Ok(Ram { p })
    }
    pub fn channels(&self) -> u32 {
        1
    }
    pub fn capacity_bytes(&self) -> u64 {
        self.p.capacity
    }
    pub fn service_ns(&mut self, _dir: IoDir, _offset: u64, len: u64, _start_ns: u64) -> u64 {
        self.p.request_ns + len * 1_000_000_000 / self.p.bandwidth
    }
}
