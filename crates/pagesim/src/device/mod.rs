//! Block devices: timing models and the request queue in front of them.
//!
//! Models the part of the block layer that matters for memory management: a request
//! (a contiguous run of sectors, read or write) is queued, merged with contiguous
//! neighbours (the block plug and the elevator's back/front merge, `blk_attempt_plug_merge`,
//! `elv_merge`), dispatched by an I/O scheduler, and serviced by a timing model that says
//! how long the device is busy with it.
//!
//! A timing model is one file implementing [`DeviceModel`]'s closed enum dispatch; the
//! registry is [`MODELS`]. Every parameter is named, has a unit and a source, and is listed
//! in docs/model.md.

mod queue;
mod ram;

pub use queue::{DeviceQueue, DeviceStats, Dispatched};
pub use ram::{Ram, RamParams};

use serde::Deserialize;

/// Direction of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDir {
    Read,
    Write,
}

/// One device as the scenario describes it: `[[device]] name = "...", model = "hdd", ...`.
/// The `model` key selects the timing model; the other keys override its parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "model", deny_unknown_fields)]
pub enum DeviceConfig {
    #[serde(rename = "ram")]
    Ram(RamParams),
}

/// Registry of timing models: (scenario name, one-line description).
pub const MODELS: &[(&str, &str)] = &[("ram", "RAM-backed block device (brd): software cost only")];

/// A timing model, dispatched through a closed enum (no `Box<dyn>` on the hot path).
#[derive(Clone, Debug)]
pub enum DeviceModel {
    Ram(Ram),
}

impl DeviceModel {
    /// Builds the model, validating its parameters.
    pub fn new(cfg: &DeviceConfig) -> Result<Self, String> {
        match cfg {
            DeviceConfig::Ram(p) => Ok(DeviceModel::Ram(Ram::new(p.clone())?)),
        }
    }

    /// Rotational media (`queue/rotational`): disables VMA swap readahead on 4.15+.
    pub fn rotational(&self) -> bool {
        false
    }

    /// `SWP_SYNCHRONOUS_IO`-capable device (brd, pmem, zram).
    pub fn synchronous_io(&self) -> bool {
        matches!(self, DeviceModel::Ram(_))
    }

    /// Requests the device services in parallel.
    pub fn channels(&self) -> u32 {
        match self {
            DeviceModel::Ram(m) => m.channels(),
        }
    }

    /// Largest request after merging (`max_sectors_kb`), in bytes.
    pub fn max_request_bytes(&self) -> u64 {
        match self {
            DeviceModel::Ram(_) => 512 * 1024,
        }
    }

    /// Capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            DeviceModel::Ram(m) => m.capacity_bytes(),
        }
    }

    /// Time the device is busy servicing one request that starts at `start_ns`.
    pub fn service_ns(&mut self, dir: IoDir, offset: u64, len: u64, start_ns: u64) -> u64 {
        match self {
            DeviceModel::Ram(m) => m.service_ns(dir, offset, len, start_ns),
        }
    }
}
