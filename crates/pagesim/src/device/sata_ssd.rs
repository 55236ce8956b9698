//! Defaults of the `sata-ssd` model: a 2010 SATA 3 Gb/s SSD of the OCZ Vertex II class
//! (SandForce SF-1200 controller, no DRAM cache), the SSD of the 2012 swap-readahead
//! experiments (spec B.2, C.1). The mechanism is the two-stage flash model in flash.rs.

use super::flash::{FlashDefaults, FlashParams, FlashSources};

pub(super) const DESCRIPTION: &str =
    "SATA SSD, 2010 (OCZ Vertex II / SandForce SF-1200): controller stage, 4 flash channels, 3 Gb/s link";

/// Marker carrying the `sata-ssd` defaults.
#[derive(Clone, Copy, Debug)]
pub struct SataSsdDefaults;

/// Parameters of the `sata-ssd` model.
pub type SataSsdParams = FlashParams<SataSsdDefaults>;

impl FlashDefaults for SataSsdDefaults {
    // 120 GB, a common Vertex 2 size (decimal GB as marketed).
    const CAPACITY: u64 = 120_000_000_000;
    const READ_LATENCY: u64 = 100_000;
    const WRITE_LATENCY: u64 = 80_000;
    const READ_BANDWIDTH: u64 = 280_000_000;
    const WRITE_BANDWIDTH: u64 = 270_000_000;
    const CHANNELS: u32 = 4;
    const IOPS_MAX: u64 = 30_000;
    const MAX_SECTORS_KB: u64 = 512;
    /// `AHCI_MAX_SG`, and the SCSI layer's 64 KiB segments.
    const MAX_SEGMENTS: u32 = 168;
    const MAX_SEGMENT_SIZE: u64 = 64 << 10;
    const SOURCES: FlashSources = FlashSources {
        capacity: "Device size. Default 120 GB, a common OCZ Vertex 2 capacity.",
        read_latency: "QD1 4 KiB random read latency, including command and transfer. Default \
                       100 us (spec B.2/B.8; marked [R] there, to be checked against C.1).",
        write_latency: "QD1 4 KiB write latency. Default 80 us (spec B.2/B.8 [R]).",
        read_bandwidth: "Sequential read bandwidth. Default 280 MB/s (OCZ Vertex 2 datasheet: \
                         up to 280 MB/s read; spec B.2).",
        write_bandwidth: "Sequential write bandwidth. Default 270 MB/s (Vertex 2 datasheet, \
                          compressible data; incompressible sustained writes are nearer \
                          150 MB/s per spec B.2 — set this key to model them).",
        channels: "Requests in flight inside the drive. Default 4 (spec B.2/B.8 k = 4).",
        iops_max: "Commands per second of the controller (serial stage). Default 30000 (spec \
                   B.2/B.8 IOPS_max = 30k [R]).",
        max_sectors_kb: "Largest request after merging. Default 512 KiB (BLK_DEF_MAX_SECTORS = \
                         1024 sectors in 3.x kernels; libata allows more).",
    };
}

#[cfg(test)]
mod tests {
    use crate::device::flash::tests::{model, qd1_latency};
    use crate::device::IoDir;

    #[test]
    fn vertex2_random_4k_qd1_is_about_10k_iops() {
        // 1 / 100 us: what a 2010 SATA SSD delivers at queue depth 1.
        let lat = qd1_latency(model("model = \"sata-ssd\""), IoDir::Read, 1000, 4096, 12_345 * 4096);
        let iops = 1e9 / lat as f64;
        assert!((9_000.0..=11_000.0).contains(&iops), "{iops}");
    }
}
