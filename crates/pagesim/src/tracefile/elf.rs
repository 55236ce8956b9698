//! The executable segments of an ELF file, for the loader mappings of a capture trace.
//!
//! QEMU user mode loads a guest program and its interpreter itself and maps their segments
//! into its own process readable only (it never runs guest code natively, and keeps text
//! pages read-only to catch self-modifying code), so /proc/self/maps, which the capture
//! reads for the loader's mappings, shows one `r--p` mapping for the header, text and
//! read-only data of each. The kernel maps each PT_LOAD segment with its own `p_flags`: the
//! text is VM_EXEC, which decides its fault read-around (6.18's exec_mmap_readahead) and
//! its reclaim (`folio_referenced` reports VM_EXEC: text used once is activated). The file's
//! program headers say which pages are text.

use std::io::{Read, Seek, SeekFrom};

const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const PAGE: u64 = 4096;

/// The file pages `[first, end)` that a PT_LOAD segment with PF_X covers in the 64-bit
/// little-endian ELF file at `path`, if it is there with the size the trace recorded
/// (`size` bytes: the same file); empty otherwise.
pub fn exec_pages(path: &str, size: u64) -> Vec<[u64; 2]> {
    read_exec_pages(path, size).unwrap_or_default()
}

fn read_exec_pages(path: &str, size: u64) -> Option<Vec<[u64; 2]>> {
    let mut f = std::fs::File::open(path).ok()?;
    if f.metadata().ok()?.len() != size {
        return None;
    }
    let mut eh = [0u8; 64];
    f.read_exact(&mut eh).ok()?;
    // ELFMAG, ELFCLASS64, ELFDATA2LSB.
    if eh[..4] != *b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let (phoff, phentsize, phnum) = (u64_at(&eh, 0x20), u16_at(&eh, 0x36) as usize, u16_at(&eh, 0x38) as usize);
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut ph = vec![0u8; phentsize * phnum];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut ph).ok()?;
    let mut out = Vec::new();
    for p in ph.chunks_exact(phentsize) {
        let (p_type, p_flags, p_offset, p_filesz) = (u32_at(p, 0), u32_at(p, 4), u64_at(p, 8), u64_at(p, 32));
        if p_type == PT_LOAD && p_flags & PF_X != 0 && p_filesz > 0 {
            out.push([p_offset / PAGE, p_offset.saturating_add(p_filesz).div_ceil(PAGE)]);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::exec_pages;

    /// An ELF file with a read-only segment (pages 0-2), a text segment (file offset
    /// 0x3000, 0x11b49 bytes: pages 3-20) and read-only data: the text's pages come back;
    /// a file of another size, or not ELF, gives none.
    #[test]
    fn the_text_segments_pages_come_from_the_program_headers() {
        let mut b = vec![0u8; 0x1c000];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&3u16.to_le_bytes());
        let segs: [(u32, u64, u64); 3] = [(4, 0, 0x2c20), (5, 0x3000, 0x11b49), (4, 0x15000, 0x5e38)];
        for (i, (flags, off, filesz)) in segs.into_iter().enumerate() {
            let p = 64 + 56 * i;
            b[p..p + 4].copy_from_slice(&1u32.to_le_bytes());
            b[p + 4..p + 8].copy_from_slice(&flags.to_le_bytes());
            b[p + 8..p + 16].copy_from_slice(&off.to_le_bytes());
            b[p + 32..p + 40].copy_from_slice(&filesz.to_le_bytes());
        }
        let path = std::env::temp_dir().join(format!("pagesim-elf-{}", std::process::id()));
        std::fs::write(&path, &b).unwrap();
        let p = path.to_string_lossy();
        assert_eq!(exec_pages(&p, b.len() as u64), vec![[3, 21]]);
        assert!(exec_pages(&p, b.len() as u64 + 1).is_empty(), "another file than the trace's");
        b[0] = 0;
        std::fs::write(&path, &b).unwrap();
        assert!(exec_pages(&p, b.len() as u64).is_empty(), "not ELF");
        let _ = std::fs::remove_file(&path);
        assert!(exec_pages(&p, b.len() as u64).is_empty(), "gone");
    }
}
