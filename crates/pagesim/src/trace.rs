//! An event log named after the kernel's tracepoints, in ftrace's text form.
//!
//! The engine records, when a run asks for it, the events of include/trace/events/vmscan.h
//! and writeback.h that reclaim and writeback studies read: `mm_vmscan_direct_reclaim_begin`
//! / `_end`, `mm_vmscan_memcg_reclaim_begin` / `_end`, `mm_vmscan_kswapd_wake` / `_sleep`,
//! `mm_vmscan_wakeup_kswapd`, `mm_vmscan_lru_isolate`, `mm_vmscan_writepage`,
//! `mm_vmscan_lru_shrink_inactive`, and `writeback_queue`, `writeback_start`,
//! `writeback_written`, `writeback_queue_io`, `balance_dirty_pages`; and those of
//! readahead.h (6.10+): `page_cache_sync_ra`, `page_cache_async_ra` (the file's readahead
//! state as the call finds it) and `page_cache_ra_order` (the window decided), `ino` being
//! the page cache's number (pagesim's file). Each is an [`Event`]; a [`TraceLog`] keeps them with the names of
//! the threads (the `comm` of ftrace's lines) and writes and reads them as the lines
//! `trace_pipe` prints, with the 2.6.36 field layout that mmtests' post-processing script
//! parses:
//!
//! ```text
//!   writer-0     [000]    12.345678: mm_vmscan_writepage: page=0x3f2 pfn=1010 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
//!   kswapd0-3    [001]    12.345900: mm_vmscan_kswapd_sleep: nid=0
//! ```
//!
//! report/ftrace.rs computes mmtests' "FTrace Reclaim Statistics: vmscan" rows from a log.
//! Recording costs nothing when off (the engine holds `None`).

use std::fmt::Write as _;

/// One event: when, which thread (a tid of the run: tasks, then kswapd, zswap's worker,
/// the flushers), on which CPU, and what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub t_ns: u64,
    pub tid: u32,
    pub cpu: u32,
    pub kind: Kind,
}

/// Why the flusher writes (`enum wb_reason` as the writeback events print it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbReason {
    Background,
    Periodic,
    Vmscan,
    Sync,
    Throttle,
}

impl WbReason {
    fn name(self) -> &'static str {
        match self {
            WbReason::Background => "background",
            WbReason::Periodic => "periodic",
            WbReason::Vmscan => "vmscan",
            WbReason::Sync => "sync",
            WbReason::Throttle => "balance_dirty_pages",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [WbReason::Background, WbReason::Periodic, WbReason::Vmscan, WbReason::Sync, WbReason::Throttle]
            .into_iter()
            .find(|r| r.name() == s)
    }
}

/// The events and their fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    DirectReclaimBegin {
        order: u32,
        may_writepage: bool,
    },
    DirectReclaimEnd {
        nr_reclaimed: u64,
    },
    /// `try_to_free_mem_cgroup_pages`; `nofs`: a readahead folio's charge (GFP_NOFS with
    /// __GFP_NORETRY, 5.8+), else GFP_HIGHUSER_MOVABLE.
    MemcgReclaimBegin {
        nofs: bool,
    },
    MemcgReclaimEnd {
        nr_reclaimed: u64,
    },
    /// A read's readahead on a miss (`sync`) or at a PG_readahead folio, with the file's
    /// readahead state before the call (`ra->start` is `start`).
    PageCacheRa {
        sync: bool,
        ino: u32,
        index: u64,
        req_count: u64,
        start: u64,
        size: u64,
        async_size: u64,
        order: u32,
        ra_pages: u64,
        prev_pos: i64,
    },
    /// The window `page_cache_ra_order` reads: from `index` (`ra->start`), `size` pages in
    /// folios of up to `order`, the PG_readahead mark `async_size` pages before its end.
    PageCacheRaOrder {
        ino: u32,
        index: u64,
        order: u32,
        size: u64,
        async_size: u64,
        ra_pages: u64,
    },
    KswapdWake {
        order: u32,
    },
    KswapdSleep,
    WakeupKswapd {
        order: u32,
    },
    /// `isolate_mode`: 0 inactive, 1 active (2.6.36's ISOLATE_INACTIVE/ACTIVE).
    LruIsolate {
        active: bool,
        nr_requested: u64,
        nr_scanned: u64,
        nr_taken: u64,
        file: bool,
    },
    Writepage {
        pfn: u32,
        file: bool,
        sync: bool,
    },
    /// The batch's `reclaim_stat` as 6.x prints it: `nr_dirty` counts file folios dirty or
    /// under writeback, `nr_writeback` those under writeback reclaim kept (case 2),
    /// `nr_activate` the pages put back on the active list.
    LruShrinkInactive {
        nr_scanned: u64,
        nr_reclaimed: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_activate: u64,
        priority: u32,
        file: bool,
    },
    WritebackQueue {
        dev: u32,
        nr_pages: u64,
        reason: WbReason,
    },
    WritebackStart {
        dev: u32,
        nr_pages: u64,
        reason: WbReason,
    },
    WritebackWritten {
        dev: u32,
        nr_pages: u64,
        reason: WbReason,
    },
    WritebackQueueIo {
        dev: u32,
        moved: u64,
    },
    BalanceDirtyPages {
        dev: u32,
        dirty: u64,
        limit: u64,
        pause_ns: u64,
    },
}

/// A run's events and its threads' names.
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    /// By tid: the `comm` ftrace prints.
    pub threads: Vec<String>,
    pub events: Vec<Event>,
}

fn flags(file: bool, sync: bool) -> &'static str {
    match (file, sync) {
        (true, false) => "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        (true, true) => "RECLAIM_WB_FILE|RECLAIM_WB_SYNC",
        (false, false) => "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
        (false, true) => "RECLAIM_WB_ANON|RECLAIM_WB_SYNC",
    }
}

impl Kind {
    /// The tracepoint's name.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::DirectReclaimBegin { .. } => "mm_vmscan_direct_reclaim_begin",
            Kind::DirectReclaimEnd { .. } => "mm_vmscan_direct_reclaim_end",
            Kind::MemcgReclaimBegin { .. } => "mm_vmscan_memcg_reclaim_begin",
            Kind::MemcgReclaimEnd { .. } => "mm_vmscan_memcg_reclaim_end",
            Kind::PageCacheRa { sync: true, .. } => "page_cache_sync_ra",
            Kind::PageCacheRa { sync: false, .. } => "page_cache_async_ra",
            Kind::PageCacheRaOrder { .. } => "page_cache_ra_order",
            Kind::KswapdWake { .. } => "mm_vmscan_kswapd_wake",
            Kind::KswapdSleep => "mm_vmscan_kswapd_sleep",
            Kind::WakeupKswapd { .. } => "mm_vmscan_wakeup_kswapd",
            Kind::LruIsolate { .. } => "mm_vmscan_lru_isolate",
            Kind::Writepage { .. } => "mm_vmscan_writepage",
            Kind::LruShrinkInactive { .. } => "mm_vmscan_lru_shrink_inactive",
            Kind::WritebackQueue { .. } => "writeback_queue",
            Kind::WritebackStart { .. } => "writeback_start",
            Kind::WritebackWritten { .. } => "writeback_written",
            Kind::WritebackQueueIo { .. } => "writeback_queue_io",
            Kind::BalanceDirtyPages { .. } => "balance_dirty_pages",
        }
    }

    fn fields(&self, out: &mut String) {
        let _ = match *self {
            Kind::DirectReclaimBegin { order, may_writepage } => {
                write!(out, "order={order} may_writepage={} gfp_flags=GFP_HIGHUSER_MOVABLE", may_writepage as u8)
            }
            Kind::DirectReclaimEnd { nr_reclaimed } | Kind::MemcgReclaimEnd { nr_reclaimed } => {
                write!(out, "nr_reclaimed={nr_reclaimed}")
            }
            Kind::MemcgReclaimBegin { nofs } => write!(
                out,
                "order=0 gfp_flags={}",
                if nofs {
                    "GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_HARDWALL"
                } else {
                    "GFP_HIGHUSER_MOVABLE"
                }
            ),
            Kind::PageCacheRa { ino, index, req_count, start, size, async_size, order, ra_pages, prev_pos, .. } => {
                write!(
                    out,
                    "dev=0:0 ino={ino:x} index={index} req_count={req_count} order={order} size={size} \
                     async_size={async_size} ra_pages={ra_pages} mmap_miss=0 prev_pos={prev_pos} start={start}"
                )
            }
            Kind::PageCacheRaOrder { ino, index, order, size, async_size, ra_pages } => write!(
                out,
                "dev=0:0 ino={ino:x} index={index} order={order} size={size} async_size={async_size} ra_pages={ra_pages}"
            ),
            Kind::KswapdWake { order } => write!(out, "nid=0 order={order}"),
            Kind::KswapdSleep => write!(out, "nid=0"),
            Kind::WakeupKswapd { order } => write!(out, "nid=0 zid=0 order={order}"),
            Kind::LruIsolate { active, nr_requested, nr_scanned, nr_taken, file } => write!(
                out,
                "isolate_mode={} order=0 nr_requested={nr_requested} nr_scanned={nr_scanned} nr_taken={nr_taken} \
                 contig_taken=0 contig_dirty=0 contig_failed=0 file={}",
                active as u8, file as u8
            ),
            Kind::Writepage { pfn, file, sync } => write!(out, "page={pfn:#x} pfn={pfn} flags={}", flags(file, sync)),
            Kind::LruShrinkInactive { nr_scanned, nr_reclaimed, nr_dirty, nr_writeback, nr_activate, priority, file } => {
                let (anon, fil) = if file { (0, nr_activate) } else { (nr_activate, 0) };
                write!(
                    out,
                    "nid=0 zid=0 nr_scanned={nr_scanned} nr_reclaimed={nr_reclaimed} nr_dirty={nr_dirty} \
                     nr_writeback={nr_writeback} nr_activate_anon={anon} nr_activate_file={fil} priority={priority} \
                     flags={}",
                    flags(file, false)
                )
            }
            Kind::WritebackQueue { dev, nr_pages, reason }
            | Kind::WritebackStart { dev, nr_pages, reason }
            | Kind::WritebackWritten { dev, nr_pages, reason } => {
                write!(out, "bdi {dev}: nr_pages={nr_pages} sync_mode=0 reason={}", reason.name())
            }
            Kind::WritebackQueueIo { dev, moved } => write!(out, "bdi {dev}: enqueue={moved}"),
            Kind::BalanceDirtyPages { dev, dirty, limit, pause_ns } => {
                write!(out, "bdi {dev}: limit={limit} dirty={dirty} pause={}", pause_ns / 1_000_000)
            }
        };
    }
}

/// `key=value` of a line's fields.
fn field<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    rest.split_whitespace().find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

fn num(rest: &str, key: &str) -> Result<u64, String> {
    let v = field(rest, key).ok_or_else(|| format!("no {key}="))?;
    let v = v.trim_end_matches(',');
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse(),
    }
    .map_err(|_| format!("{key}={v} is not a number"))
}

/// `key=value` of a line's fields, the value in hex without a prefix (the `ino` ftrace prints).
fn hex(rest: &str, key: &str) -> Result<u64, String> {
    let v = field(rest, key).ok_or_else(|| format!("no {key}="))?;
    u64::from_str_radix(v, 16).map_err(|_| format!("{key}={v} is not a hexadecimal number"))
}

fn bdi(rest: &str) -> Result<u32, String> {
    let v = rest.strip_prefix("bdi ").and_then(|r| r.split(':').next()).ok_or("no bdi")?;
    v.parse().map_err(|_| format!("bdi {v} is not a device number"))
}

impl TraceLog {
    /// The line of event `e` (without its newline).
    pub fn line(&self, e: &Event, out: &mut String) {
        let comm = self.threads.get(e.tid as usize).map_or("?", |s| s.as_str());
        let _ = write!(
            out,
            "{comm}-{} [{:03}] {}.{:06}: {}: ",
            e.tid,
            e.cpu,
            e.t_ns / 1_000_000_000,
            e.t_ns % 1_000_000_000 / 1_000,
            e.kind.name()
        );
        e.kind.fields(out);
    }

    /// Writes every event, one line each.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut s = String::new();
        for e in &self.events {
            s.clear();
            self.line(e, &mut s);
            s.push('\n');
            w.write_all(s.as_bytes())?;
        }
        Ok(())
    }

    /// Reads the lines [`TraceLog::write_to`] writes (the file named `origin` in
    /// errors, which give the line). Blank lines and `#` comments (ftrace's header) are
    /// skipped; events pagesim does not know are skipped too, as the post-processing script
    /// does.
    pub fn parse(text: &str, origin: &str) -> Result<TraceLog, String> {
        let mut log = TraceLog::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |m: String| format!("{origin}: line {}: {m}: {line}", n + 1);
            let (head, rest) =
                line.split_once("] ").ok_or_else(|| err("expected `comm-pid [cpu] time: event:`".into()))?;
            let (task, cpu) = head.rsplit_once(" [").ok_or_else(|| err("no [cpu]".into()))?;
            let (comm, tid) = task.trim().rsplit_once('-').ok_or_else(|| err("no comm-pid".into()))?;
            let tid: u32 = tid.parse().map_err(|_| err(format!("pid {tid} is not a number")))?;
            let cpu: u32 = cpu.parse().map_err(|_| err(format!("cpu {cpu} is not a number")))?;
            let (time, rest) = rest.trim().split_once(": ").ok_or_else(|| err("no time".into()))?;
            let (secs, frac) = time.split_once('.').unwrap_or((time, "0"));
            let t_ns = secs.parse::<u64>().ok().zip(format!("{frac:0<9}")[..9].parse::<u64>().ok());
            let Some((secs, ns)) = t_ns else { return Err(err(format!("time {time} is not seconds"))) };
            let (name, f) = rest.split_once(':').unwrap_or((rest, ""));
            let f = f.trim();
            let fl = |k| field(f, k).unwrap_or("");
            let kind = match name {
                "mm_vmscan_direct_reclaim_begin" => Kind::DirectReclaimBegin {
                    order: num(f, "order").map_err(&err)? as u32,
                    may_writepage: num(f, "may_writepage").map_err(&err)? != 0,
                },
                "mm_vmscan_direct_reclaim_end" => {
                    Kind::DirectReclaimEnd { nr_reclaimed: num(f, "nr_reclaimed").map_err(&err)? }
                }
                "mm_vmscan_memcg_reclaim_begin" => {
                    Kind::MemcgReclaimBegin { nofs: fl("gfp_flags").contains("GFP_NOFS") }
                }
                "mm_vmscan_memcg_reclaim_end" => {
                    Kind::MemcgReclaimEnd { nr_reclaimed: num(f, "nr_reclaimed").map_err(&err)? }
                }
                "page_cache_sync_ra" | "page_cache_async_ra" => Kind::PageCacheRa {
                    sync: name == "page_cache_sync_ra",
                    ino: hex(f, "ino").map_err(&err)? as u32,
                    index: num(f, "index").map_err(&err)?,
                    req_count: num(f, "req_count").map_err(&err)?,
                    start: num(f, "start").map_err(&err)?,
                    size: num(f, "size").map_err(&err)?,
                    async_size: num(f, "async_size").map_err(&err)?,
                    order: num(f, "order").map_err(&err)? as u32,
                    ra_pages: num(f, "ra_pages").map_err(&err)?,
                    prev_pos: fl("prev_pos").parse().map_err(|_| err("prev_pos is not a number".into()))?,
                },
                "page_cache_ra_order" => Kind::PageCacheRaOrder {
                    ino: hex(f, "ino").map_err(&err)? as u32,
                    index: num(f, "index").map_err(&err)?,
                    order: num(f, "order").map_err(&err)? as u32,
                    size: num(f, "size").map_err(&err)?,
                    async_size: num(f, "async_size").map_err(&err)?,
                    ra_pages: num(f, "ra_pages").map_err(&err)?,
                },
                "mm_vmscan_kswapd_wake" => Kind::KswapdWake { order: num(f, "order").map_err(&err)? as u32 },
                "mm_vmscan_kswapd_sleep" => Kind::KswapdSleep,
                "mm_vmscan_wakeup_kswapd" => Kind::WakeupKswapd { order: num(f, "order").map_err(&err)? as u32 },
                "mm_vmscan_lru_isolate" => Kind::LruIsolate {
                    active: num(f, "isolate_mode").map_err(&err)? == 1,
                    nr_requested: num(f, "nr_requested").map_err(&err)?,
                    nr_scanned: num(f, "nr_scanned").map_err(&err)?,
                    nr_taken: num(f, "nr_taken").map_err(&err)?,
                    file: field(f, "file") == Some("1"),
                },
                "mm_vmscan_writepage" => Kind::Writepage {
                    pfn: num(f, "pfn").map_err(&err)? as u32,
                    file: fl("flags").contains("RECLAIM_WB_FILE"),
                    sync: fl("flags").contains("RECLAIM_WB_SYNC"),
                },
                "mm_vmscan_lru_shrink_inactive" => {
                    // Logs written before these fields were printed have none: 0.
                    let opt = |k| if field(f, k).is_some() { num(f, k).map_err(&err) } else { Ok(0) };
                    Kind::LruShrinkInactive {
                        nr_scanned: num(f, "nr_scanned").map_err(&err)?,
                        nr_reclaimed: num(f, "nr_reclaimed").map_err(&err)?,
                        nr_dirty: opt("nr_dirty")?,
                        nr_writeback: opt("nr_writeback")?,
                        nr_activate: opt("nr_activate_anon")? + opt("nr_activate_file")?,
                        priority: num(f, "priority").map_err(&err)? as u32,
                        file: fl("flags").contains("RECLAIM_WB_FILE"),
                    }
                }
                "writeback_queue" | "writeback_start" | "writeback_written" => {
                    let dev = bdi(f).map_err(&err)?;
                    let nr_pages = num(f, "nr_pages").map_err(&err)?;
                    let reason = WbReason::parse(fl("reason")).ok_or_else(|| err("unknown reason".into()))?;
                    match name {
                        "writeback_queue" => Kind::WritebackQueue { dev, nr_pages, reason },
                        "writeback_start" => Kind::WritebackStart { dev, nr_pages, reason },
                        _ => Kind::WritebackWritten { dev, nr_pages, reason },
                    }
                }
                "writeback_queue_io" => {
                    Kind::WritebackQueueIo { dev: bdi(f).map_err(&err)?, moved: num(f, "enqueue").map_err(&err)? }
                }
                "balance_dirty_pages" => Kind::BalanceDirtyPages {
                    dev: bdi(f).map_err(&err)?,
                    dirty: num(f, "dirty").map_err(&err)?,
                    limit: num(f, "limit").map_err(&err)?,
                    pause_ns: num(f, "pause").map_err(&err)? * 1_000_000,
                },
                _ => continue,
            };
            let tid_us = tid as usize;
            if log.threads.len() <= tid_us {
                log.threads.resize(tid_us + 1, String::new());
            }
            if log.threads[tid_us].is_empty() {
                log.threads[tid_us] = comm.to_string();
            }
            log.events.push(Event { t_ns: secs * 1_000_000_000 + ns, tid, cpu, kind });
        }
        Ok(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind survives a write and a read (at the microsecond the text keeps).
    #[test]
    fn lines_read_back_as_the_events_written() {
        let kinds = [
            Kind::DirectReclaimBegin { order: 0, may_writepage: true },
            Kind::DirectReclaimEnd { nr_reclaimed: 32 },
            Kind::MemcgReclaimBegin { nofs: true },
            Kind::MemcgReclaimBegin { nofs: false },
            Kind::MemcgReclaimEnd { nr_reclaimed: 64 },
            Kind::PageCacheRa {
                sync: true,
                ino: 0x13,
                index: 645,
                req_count: 15,
                start: 1664,
                size: 2048,
                async_size: 2048,
                order: 6,
                ra_pages: 4096,
                prev_pos: -1,
            },
            Kind::PageCacheRa {
                sync: false,
                ino: 0x13,
                index: 660,
                req_count: 1,
                start: 645,
                size: 64,
                async_size: 49,
                order: 0,
                ra_pages: 4096,
                prev_pos: 2703360,
            },
            Kind::PageCacheRaOrder { ino: 0x13, index: 709, order: 2, size: 255, async_size: 255, ra_pages: 4096 },
            Kind::KswapdWake { order: 0 },
            Kind::KswapdSleep,
            Kind::WakeupKswapd { order: 2 },
            Kind::LruIsolate { active: true, nr_requested: 32, nr_scanned: 40, nr_taken: 31, file: true },
            Kind::Writepage { pfn: 1010, file: true, sync: false },
            Kind::Writepage { pfn: 7, file: false, sync: true },
            Kind::LruShrinkInactive {
                nr_scanned: 32,
                nr_reclaimed: 5,
                nr_dirty: 0,
                nr_writeback: 0,
                nr_activate: 3,
                priority: 11,
                file: false,
            },
            Kind::LruShrinkInactive {
                nr_scanned: 32,
                nr_reclaimed: 0,
                nr_dirty: 32,
                nr_writeback: 12,
                nr_activate: 12,
                priority: 10,
                file: true,
            },
            Kind::WritebackQueue { dev: 0, nr_pages: 48, reason: WbReason::Vmscan },
            Kind::WritebackStart { dev: 1, nr_pages: 1024, reason: WbReason::Background },
            Kind::WritebackWritten { dev: 1, nr_pages: 1024, reason: WbReason::Periodic },
            Kind::WritebackQueueIo { dev: 0, moved: 3 },
            Kind::BalanceDirtyPages { dev: 0, dirty: 100, limit: 200, pause_ns: 12_000_000 },
        ];
        let log = TraceLog {
            threads: vec!["writer".into(), "kswapd0".into()],
            events: kinds
                .iter()
                .enumerate()
                .map(|(i, &kind)| Event {
                    t_ns: 1_000_000_000 * i as u64 + 123_456_000,
                    tid: (i % 2) as u32,
                    cpu: 1,
                    kind,
                })
                .collect(),
        };
        let mut out = Vec::new();
        log.write_to(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("writer-0 [001] 0.123456: mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1"));
        let back = TraceLog::parse(&text, "t").unwrap();
        assert_eq!(back.events, log.events);
        assert_eq!(back.threads, log.threads);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let e =
            TraceLog::parse("# tracer: nop\nw-0 [000] 1.0: mm_vmscan_direct_reclaim_end: nr_reclaimed=x\n", "f.txt")
                .unwrap_err();
        assert!(e.starts_with("f.txt: line 2: nr_reclaimed=x is not a number"), "{e}");
        let e = TraceLog::parse("garbage\n", "f.txt").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        // Events pagesim does not model are skipped, as the script skips them.
        let l = TraceLog::parse("w-0 [000] 1.5: sched_switch: prev=a\n", "f").unwrap();
        assert!(l.events.is_empty());
    }
}
