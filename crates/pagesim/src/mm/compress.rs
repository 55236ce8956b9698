//! What a swapped page compresses to, and what compressing it costs: the compressors that
//! zswap (crypto/lzo.c, lz4.c, zstd.c, deflate.c through the crypto API) and zram
//! (drivers/block/zram/backend_*.c) use, and the content of the pages pagesim swaps. In
//! mm/ because both engine/zswap.rs and device/zram.rs use it (the kernel has no such file:
//! it keeps no model of page content).
//!
//! DOC: pagesim does not hold page contents, so it models them. Each page of a region has a
//! *content* drawn once from the region's content model (keys `compress_ratio`,
//! `compress_sigma`, `incompressible_percent`, `zero_percent`), deterministically from the run's
//! seed, the VMA (or shmem object) and the page index, without consuming the workload's RNG:
//!
//! * `Zero`: all bytes zero (a same-filled page: zeromap, zswap same-filled, zram "same");
//! * `Word`: one non-zero 8-byte word at the start, the rest zero. This is what pagesim's
//!   workload programs write (and what pagesim-load stores on the real machine), so it is the
//!   content of every page when the region sets no `compress_ratio`;
//! * `Data(len)`: program data that lzo compresses to `len` bytes; `len = 4096 / r` with the
//!   ratio `r` log-normal around `compress_ratio` (its log has standard deviation
//!   `compress_sigma`; the mean of `r` is `compress_ratio`);
//! * `Incompressible`: does not compress below PAGE_SIZE.
//!
//! A compressor turns a content into a length: `Word` into its measured word length, `Data`
//! into `len` times its size factor relative to lzo. Its CPU cost is interpolated linearly in
//! the compressed length between two measured anchors, the word page and program data (a
//! page of this machine's shared libraries), and held constant outside them: LZ compressors
//! spend their time per token, and the anchors are the two ends of what pagesim's contents
//! produce. Sources per compressor in [`COMPRESSORS`] and docs/model.md.

use crate::rng::Rng;

/// PAGE_SIZE.
pub const PAGE: u32 = 4096;

/// A compression algorithm with its physical figures.
#[derive(Debug)]
pub struct Compressor {
    /// Name as zswap's `compressor` and zram's `comp_algorithm` spell it.
    pub name: &'static str,
    /// Compressed bytes of a `Word` page.
    pub word_len: u32,
    /// Compressed size of program data relative to lzo's, per mille.
    pub data_permille: u32,
    /// Compressed bytes of the program-data anchor (a page of shared libraries).
    pub data_len: u32,
    /// CPU to compress a `Word` page / the data anchor, ns.
    pub compress_word_ns: u64,
    pub compress_data_ns: u64,
    /// CPU to decompress a `Word` page / the data anchor, ns.
    pub decompress_word_ns: u64,
    pub decompress_data_ns: u64,
    /// Where the figures come from.
    pub source: &'static str,
}

const MEASURED: &str = "measured on this machine's 6.18 zram with scripts/measure-compressors.sh \
                        (AMD EPYC Zen 4, KVM guest): bytes from mm_stat, CPU as the extra time of 4 KiB \
                        O_DIRECT writes/reads over same-filled pages, best of 5 runs x 5";

/// The registry of compressors.
pub const COMPRESSORS: &[Compressor] = &[
    Compressor {
        name: "lzo",
        word_len: 44,
        data_permille: 1000,
        data_len: 2055,
        compress_word_ns: 750,
        compress_data_ns: 6_750,
        // lzo1x copies a long zero run byte by byte (a distance-1 match): slow on word pages.
        decompress_word_ns: 7_450,
        decompress_data_ns: 2_600,
        source: MEASURED,
    },
    Compressor {
        name: "lzo-rle",
        word_len: 41,
        data_permille: 1009,
        data_len: 2073,
        compress_word_ns: 700,
        compress_data_ns: 7_000,
        decompress_word_ns: 300,
        decompress_data_ns: 2_650,
        source: MEASURED,
    },
    Compressor {
        name: "lz4",
        word_len: 31,
        data_permille: 1041,
        data_len: 2139,
        compress_word_ns: 1_050,
        compress_data_ns: 6_700,
        decompress_word_ns: 450,
        decompress_data_ns: 1_800,
        source: MEASURED,
    },
    Compressor {
        name: "zstd",
        word_len: 20,
        data_permille: 679,
        data_len: 1395,
        compress_word_ns: 2_100,
        compress_data_ns: 13_400,
        decompress_word_ns: 1_500,
        decompress_data_ns: 6_000,
        source: "not available on this machine: lz4's measured figures scaled by published ratios \
                 [S]: size 2.69/3.96 of lzo on a memory image (spec readahead_swap.md §4.3), \
                 decompress x3.3 (zram fio 5.71 vs 1.71 us), compress x2 (lzbench zstd -1 vs lz4, \
                 the kernel's default level 3 is slower); word length [R]",
    },
    Compressor {
        name: "deflate",
        word_len: 20,
        data_permille: 680,
        data_len: 1397,
        compress_word_ns: 4_000,
        compress_data_ns: 60_000,
        decompress_word_ns: 2_000,
        decompress_data_ns: 9_000,
        source: "not measured [S]: spec devices_and_prefetchers.md B.6 (zlib-1 63/15 us per 4 KiB on \
                 a 2012 i5, modern cores 1.5-2x faster), size as zstd's [R]; word figures [R]",
    },
];

/// Looks a compressor up by name.
pub fn find(name: &str) -> Option<&'static Compressor> {
    COMPRESSORS.iter().find(|c| c.name == name)
}

/// Registry names, for messages.
pub fn names() -> String {
    COMPRESSORS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}

fn interpolate(len: u32, (x0, y0): (u32, u64), (x1, y1): (u32, u64)) -> u64 {
    let len = len.clamp(x0.min(x1), x0.max(x1));
    if x0 == x1 {
        return y0;
    }
    let t = (len - x0.min(x1)) as i128;
    let (ya, yb) = if x0 < x1 { (y0 as i128, y1 as i128) } else { (y1 as i128, y0 as i128) };
    (ya + (yb - ya) * t / (x0.abs_diff(x1) as i128)) as u64
}

impl Compressor {
    /// Compressed length of a page's content, or `None` for a same-filled (zero) page.
    /// A length of more than PAGE_SIZE means the page did not compress.
    pub fn compressed_len(&self, c: Content) -> Option<u32> {
        match c {
            Content::Zero => None,
            Content::Word => Some(self.word_len),
            Content::Data(len) => Some(((len as u64 * self.data_permille as u64).div_ceil(1000) as u32).max(1)),
            Content::Incompressible => Some(PAGE + 1),
        }
    }

    /// CPU time to compress a page that compresses to `len` bytes.
    pub fn compress_ns(&self, len: u32) -> u64 {
        interpolate(len, (self.word_len, self.compress_word_ns), (self.data_len, self.compress_data_ns))
    }

    /// CPU time to decompress an object of `len` bytes.
    pub fn decompress_ns(&self, len: u32) -> u64 {
        interpolate(len, (self.word_len, self.decompress_word_ns), (self.data_len, self.decompress_data_ns))
    }
}

/// CPU time to copy one page (a page stored uncompressed, or filling a same-filled page):
/// 4 KiB at 8 GB/s, the `ram` device's memcpy bandwidth \[R\].
pub const PAGE_COPY_NS: u64 = 512;

/// A page's content as far as compression goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    Zero,
    Word,
    /// Compresses to this many bytes under lzo (1..=4096).
    Data(u32),
    Incompressible,
}

impl Content {
    /// Packs into a non-zero u16 (0 means "not recorded").
    pub fn pack(self) -> u16 {
        match self {
            Content::Zero => 1,
            Content::Word => 2,
            Content::Incompressible => 3,
            Content::Data(len) => 3 + len.clamp(1, PAGE) as u16,
        }
    }

    pub fn unpack(v: u16) -> Content {
        match v {
            0 | 2 => Content::Word,
            1 => Content::Zero,
            3 => Content::Incompressible,
            n => Content::Data((n - 3) as u32),
        }
    }
}

/// The content model of one region (scenario keys of `[region.NAME]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegionContent {
    /// Mean compression ratio of program data (lzo); `None`: `Word` pages.
    pub ratio: Option<f64>,
    /// Standard deviation of the log of a page's ratio.
    pub sigma: f64,
    /// Fraction of pages that do not compress.
    pub incompressible: f64,
    /// Fraction of pages that are all zero.
    pub zero: f64,
}

impl Default for RegionContent {
    fn default() -> Self {
        RegionContent { ratio: None, sigma: 0.0, incompressible: 0.0, zero: 0.0 }
    }
}

/// A uniform draw in [0, 1) from 53 bits.
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

impl RegionContent {
    /// The content of page `index` of the VMA or shmem object `owner_key`, for the run's
    /// `seed`.
    pub fn draw(&self, seed: u64, owner_key: u32, index: u32) -> Content {
        let mut r = Rng::new(seed ^ 0x5a17_c0de_0000_0000 ^ ((owner_key as u64) << 32 | index as u64));
        let u = unit(r.next_u64());
        if u < self.zero {
            return Content::Zero;
        }
        if u < self.zero + self.incompressible {
            return Content::Incompressible;
        }
        let Some(mean) = self.ratio else { return Content::Word };
        let ratio = if self.sigma > 0.0 {
            // Box-Muller; log-normal with mean `mean`: mu = ln(mean) - sigma^2 / 2.
            let (u1, u2) = (unit(r.next_u64()).max(f64::MIN_POSITIVE), unit(r.next_u64()));
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (mean.ln() - self.sigma * self.sigma / 2.0 + self.sigma * z).exp()
        } else {
            mean
        };
        if ratio <= 1.0 {
            return Content::Incompressible;
        }
        Content::Data(((PAGE as f64 / ratio).ceil() as u32).clamp(1, PAGE))
    }
}

/// Zeromap bit of a slot's record (6.12+ `si->zeromap`).
const ZEROMAP: u16 = 1 << 15;

/// The content of the pages in swap: per swap slot, the content of the page written there
/// (recorded when the page enters the swap cache, while its owner is known), and the
/// zeromap bit. Only kept when something looks at contents (zswap, zram, zero pages).
#[derive(Debug)]
pub struct PageContent {
    /// Contents matter in this run.
    pub active: bool,
    seed: u64,
    /// Per region, in the scenario's region order.
    regions: Vec<RegionContent>,
    /// Per swap area, per slot: packed [`Content`] (0 = not recorded) | [`ZEROMAP`].
    slots: Vec<Vec<u16>>,
}

impl PageContent {
    pub fn new(regions: Vec<RegionContent>, seed: u64, area_slots: &[u32], active: bool) -> Self {
        let slots = if active { area_slots.iter().map(|&n| vec![0; n as usize]).collect() } else { Vec::new() };
        PageContent { active, seed, regions, slots }
    }

    /// Records the content of page `index` of `owner_key` (a VMA, or a shmem object with the
    /// top bit set) of region `region`, now written to `e`.
    pub fn record(&mut self, e: super::swapops::Entry, owner_key: u32, region: u32, index: u32) {
        if !self.active {
            return;
        }
        let c = self.regions[region as usize].draw(self.seed, owner_key, index);
        let v = &mut self.slots[e.area()][e.slot() as usize];
        *v = (*v & ZEROMAP) | c.pack();
    }

    /// Content of the page written to `e`.
    pub fn get(&self, e: super::swapops::Entry) -> Content {
        if !self.active {
            return Content::Word;
        }
        Content::unpack(self.slots[e.area()][e.slot() as usize] & !ZEROMAP)
    }

    pub fn zeromap(&self, e: super::swapops::Entry) -> bool {
        self.active && self.slots[e.area()][e.slot() as usize] & ZEROMAP != 0
    }

    pub fn set_zeromap(&mut self, e: super::swapops::Entry, on: bool) {
        if !self.active {
            return;
        }
        let v = &mut self.slots[e.area()][e.slot() as usize];
        *v = if on { *v | ZEROMAP } else { *v & !ZEROMAP };
    }

    /// The slot was freed.
    pub fn clear(&mut self, e: super::swapops::Entry) {
        if self.active {
            self.slots[e.area()][e.slot() as usize] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compressor_is_found_and_word_pages_are_tiny() {
        for c in COMPRESSORS {
            assert_eq!(find(c.name).map(|x| x.name), Some(c.name));
            let w = c.compressed_len(Content::Word).unwrap();
            assert!(w < 64 && w < c.data_len, "{}", c.name);
            assert!(c.compress_data_ns > c.compress_word_ns, "{}", c.name);
        }
        assert!(find("snappy").is_none());
    }

    #[test]
    fn cost_interpolates_between_the_anchors_and_is_flat_outside() {
        let lzo = find("lzo").unwrap();
        assert_eq!(lzo.compress_ns(44), 750);
        assert_eq!(lzo.compress_ns(2055), 6_750);
        assert_eq!(lzo.compress_ns(10), 750);
        assert_eq!(lzo.compress_ns(4096), 6_750);
        let mid = lzo.compress_ns((44 + 2055) / 2);
        assert!((3_700..=3_800).contains(&mid), "{mid}");
        // Decompression of lzo is slower for word pages than for data: the slope is negative.
        assert_eq!(lzo.decompress_ns(44), 7_450);
        assert!(lzo.decompress_ns(1000) < 7_450 && lzo.decompress_ns(1000) > 2_600);
    }

    #[test]
    fn content_packs_and_lengths_scale_with_the_compressor() {
        for c in [Content::Zero, Content::Word, Content::Incompressible, Content::Data(1), Content::Data(4096)] {
            assert_eq!(Content::unpack(c.pack()), c);
            assert_ne!(c.pack(), 0);
        }
        let lz4 = find("lz4").unwrap();
        assert_eq!(lz4.compressed_len(Content::Data(1000)), Some(1041));
        assert_eq!(lz4.compressed_len(Content::Zero), None);
        assert!(lz4.compressed_len(Content::Incompressible).unwrap() > PAGE);
    }

    #[test]
    fn draws_are_deterministic_and_follow_the_mix() {
        let m = RegionContent { ratio: Some(2.6), sigma: 0.4, incompressible: 0.1, zero: 0.15 };
        let n = 20_000u32;
        let (mut zero, mut inc, mut sum_ratio, mut data) = (0, 0, 0.0, 0);
        for i in 0..n {
            let c = m.draw(7, 3, i);
            assert_eq!(c, m.draw(7, 3, i), "same seed, owner and index, same content");
            match c {
                Content::Zero => zero += 1,
                Content::Incompressible => inc += 1,
                Content::Data(len) => {
                    data += 1;
                    sum_ratio += 4096.0 / len as f64;
                }
                Content::Word => panic!("a region with a ratio has no word pages"),
            }
        }
        let f = |k: u32| k as f64 / n as f64;
        assert!((0.14..0.16).contains(&f(zero)), "zero {}", f(zero));
        // Incompressible: the 10% drawn so, plus the data pages whose ratio fell below 1.
        assert!((0.10..0.115).contains(&f(inc)), "incompressible {}", f(inc));
        let mean = sum_ratio / data as f64;
        assert!((2.45..2.75).contains(&mean), "mean ratio {mean}");
        let other = (0..100).filter(|&i| m.draw(8, 3, i) != m.draw(7, 3, i)).count();
        assert!(other > 50, "another seed draws other contents");
        assert_eq!(RegionContent::default().draw(1, 0, 0), Content::Word);
    }
}
