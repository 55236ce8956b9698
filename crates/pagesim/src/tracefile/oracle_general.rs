//! libCacheSim's `oracleGeneral` binary traces: packed little-endian 24-byte records
//! `u32 clock_time (s); u64 obj_id; u32 obj_size (bytes); i64 next_access_vtime` (-1: never
//! again). An object is a space of its own, its bytes split into pages; every request reads.

use super::{Format, Input, Op, Reader, Ref, TraceError};
use std::io::Read;

pub const FORMAT: Format = Format {
    name: "oracleGeneral",
    about: "libCacheSim's binary object trace (24-byte records: time s, object id, size, next access)",
    open: |input| Box::new(OracleGeneral { input, record: 0, first_s: None }),
};

const RECORD: usize = 24;

struct OracleGeneral {
    input: Input,
    record: u64,
    first_s: Option<u32>,
}

impl Reader for OracleGeneral {
    fn next_refs(&mut self, out: &mut Vec<Ref>) -> Result<(), TraceError> {
        // The whole records the stream's buffer holds, decoded there; a record across a
        // refill (or the end) goes through next_ref.
        let buf = match self.input.stream.fill_buf() {
            Ok(b) if b.len() >= RECORD => b,
            _ => return self.next_ref().map(|r| out.extend(r)),
        };
        let whole = buf.len() / RECORD * RECORD;
        out.reserve(whole / RECORD);
        let mut bad = None;
        for rec in buf[..whole].chunks_exact(RECORD) {
            self.record += 1;
            match decode(rec, &mut self.first_s) {
                Ok(r) => out.push(r),
                Err(what) => {
                    bad = Some(what);
                    break;
                }
            }
        }
        self.input.stream.consume(whole);
        match bad {
            Some(what) => Err(self.input.error(self.record, what)),
            None => Ok(()),
        }
    }

    fn next_ref(&mut self) -> Result<Option<Ref>, TraceError> {
        let mut buf = [0u8; RECORD];
        let whole = match self.input.stream.fill_buf() {
            // Usually the buffer holds the whole record: read it there.
            Ok(b) if b.len() >= RECORD => {
                buf.copy_from_slice(&b[..RECORD]);
                self.input.stream.consume(RECORD);
                RECORD
            }
            _ => self.read_across_refills(&mut buf)?,
        };
        if whole == 0 {
            return Ok(None);
        }
        self.record += 1;
        if whole < RECORD {
            return Err(self.input.error(self.record, format!("truncated: {whole} of {RECORD} bytes")));
        }
        decode(&buf, &mut self.first_s).map(Some).map_err(|what| self.input.error(self.record, what))
    }
}

/// The page reference of record `rec`; `first_s` is the first record's time (set by the
/// first record).
#[inline]
fn decode(rec: &[u8], first_s: &mut Option<u32>) -> Result<Ref, String> {
    let time = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
    let obj = u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes"));
    let size = u32::from_le_bytes(rec[12..16].try_into().expect("4 bytes"));
    let first = *first_s.get_or_insert(time);
    let Some(dt) = time.checked_sub(first) else {
        return Err(format!("time {time} s goes back before the first record's {first} s"));
    };
    Ok(Ref::bytes(dt as u64 * 1_000_000_000, Op::Read, obj, 0, size as u64))
}

impl OracleGeneral {
    /// Reads a record that spans the stream's buffer refills; returns the bytes read (fewer
    /// than a record at the end of the file).
    fn read_across_refills(&mut self, buf: &mut [u8; RECORD]) -> Result<usize, TraceError> {
        let mut got = 0;
        while got < RECORD {
            match self.input.stream.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.input.error(self.record + 1, format!("cannot read: {e}"))),
            }
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, file};
    use super::super::Op;

    fn rec(time: u32, obj: u64, size: u32, next: i64) -> Vec<u8> {
        [&time.to_le_bytes()[..], &obj.to_le_bytes(), &size.to_le_bytes(), &next.to_le_bytes()].concat()
    }

    #[test]
    fn records_become_the_pages_of_each_object() {
        let bytes = [rec(100, 42, 512, -1), rec(101, 7, 10_000, 3), rec(103, 42, 512, -1)].concat();
        let refs = all(&file("a.oracleGeneral.bin", &bytes), "oracleGeneral").unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.time_ns, r.space, r.page, r.pages, r.op)).collect();
        assert_eq!(
            got,
            [(0, 42, 0, 1, Op::Read), (1_000_000_000, 7, 0, 3, Op::Read), (3_000_000_000, 42, 0, 1, Op::Read)]
        );
    }

    /// More records than the stream's 64 KiB buffer holds, so that some span a refill: read
    /// in batches as one by one (`all` compares them), and a bad record past the first
    /// buffer named by its number.
    #[test]
    fn batches_across_the_buffer_read_every_record_once() {
        let bytes: Vec<u8> = (0..6000u32).flat_map(|i| rec(10 + i / 100, i as u64 % 97, 4096, -1)).collect();
        let refs = all(&file("big.oracleGeneral.bin", &bytes), "oracleGeneral").unwrap();
        assert_eq!(refs.len(), 6000);
        assert!(refs
            .iter()
            .enumerate()
            .all(|(i, r)| r.space == i as u64 % 97 && r.time_ns == (i as u64 / 100) * 1_000_000_000));
        let mut bad = bytes.clone();
        bad[4320 * 24..4320 * 24 + 4].copy_from_slice(&0u32.to_le_bytes());
        let e = all(&file("bad.oracleGeneral.bin", &bad), "oracleGeneral").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("bad.oracleGeneral.bin: record 4321: time 0 s goes back before the first record's 10 s"),
            "{e}"
        );
    }

    #[test]
    fn a_truncated_record_is_named() {
        let mut bytes = [rec(1, 1, 4096, -1), rec(2, 2, 4096, -1)].concat();
        bytes.truncate(24 + 10);
        let e = all(&file("t.oracleGeneral.bin", &bytes), "oracleGeneral").unwrap_err();
        assert!(e.to_string().ends_with("t.oracleGeneral.bin: record 2: truncated: 10 of 24 bytes"), "{e}");
    }
}
