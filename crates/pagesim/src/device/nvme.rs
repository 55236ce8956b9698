//! Defaults of the `nvme` model: a datacenter NAND NVMe SSD of the Intel P3700 class
//! (spec B.3). The mechanism is the two-stage flash model in flash.rs.

use super::flash::{FlashDefaults, FlashParams, FlashSources};

pub(super) const DESCRIPTION: &str =
    "NVMe NAND SSD (Intel P3700 class): controller stage, 32 parallel channels, PCIe link";

/// Marker carrying the `nvme` defaults.
#[derive(Clone, Copy, Debug)]
pub struct NvmeDefaults;

/// Parameters of the `nvme` model.
pub type NvmeParams = FlashParams<NvmeDefaults>;

impl FlashDefaults for NvmeDefaults {
    // 800 GB, a P3700 size (decimal GB as marketed).
    const CAPACITY: u64 = 800_000_000_000;
    const READ_LATENCY: u64 = 80_000;
    const WRITE_LATENCY: u64 = 20_000;
    const READ_BANDWIDTH: u64 = 3_500_000_000;
    const WRITE_BANDWIDTH: u64 = 3_500_000_000;
    const CHANNELS: u32 = 32;
    const IOPS_MAX: u64 = 500_000;
    const MAX_SECTORS_KB: u64 = 128;
    /// `NVME_MAX_SEGS` (128 in 6.x; 127 before); PRP lists put no limit on a segment's size.
    const MAX_SEGMENTS: u32 = 128;
    const MAX_SEGMENT_SIZE: u64 = u32::MAX as u64;
    const SOURCES: FlashSources = FlashSources {
        capacity: "Device size. Default 800 GB (an Intel P3700 capacity).",
        read_latency: "QD1 4 KiB random read latency. Default 80 us (spec B.3 [V]: AnandTech \
                       P4800X review measured the P3700 at 77.9 us mean; a client PCIe 4.0 \
                       drive is about 50 us).",
        write_latency: "QD1 4 KiB write latency, acknowledged from the drive's power-protected \
                        write buffer. Default 20 us (spec B.3/B.8).",
        read_bandwidth: "Sequential read bandwidth. Default 3.5 GB/s (spec B.3/B.8).",
        write_bandwidth: "Sequential write bandwidth. Default 3.5 GB/s (spec B.3/B.8 give one \
                          BW for both directions).",
        channels: "Requests in flight inside the drive. Default 32 (spec B.3/B.8 k = 32).",
        iops_max: "Commands per second of the controller. Default 500000 (spec B.3/B.8).",
        max_sectors_kb: "Largest request after merging. Default 128 KiB: NVMe drives that \
                         report MDTS = 5 with 4 KiB pages (common on Intel DC drives [R]) cap \
                         max_hw_sectors_kb at 128.",
    };
}

#[cfg(test)]
mod tests {
    use crate::device::flash::tests::{model, run_batch};
    use crate::device::IoDir;

    #[test]
    fn queue_depth_16_gives_p3700_class_throughput() {
        // AnandTech (spec B.3): P3700 4 KiB random read at QD16, 167k IOPS. The model keeps
        // 16 requests in flight by dispatching 16 at a time with 16 channels.
        let m = model("model = \"nvme\"\nchannels = 16");
        let n = 16_000;
        let (elapsed, _) = run_batch(m, IoDir::Read, n, 4096, 1 << 20);
        let iops = n as f64 / (elapsed as f64 / 1e9);
        assert!((150_000.0..=210_000.0).contains(&iops), "{iops}");
    }
}
