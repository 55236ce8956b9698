use super::*;

fn input() -> ScanInput {
    ScanInput {
        sizes: [1000, 3000, 20, 10],
        priority: 12,
        swappiness: 60,
        can_swap: true,
        global: false,
        kswapd: false,
        zone_reclaimable: true,
        free: 100,
        high_wmark: 50,
        node_file: 30,
        inactive_file_low: true,
        ..Default::default()
    }
}

#[test]
fn per_lru_force_scans_the_small_file_lists_too() {
    // memcg reclaim at priority 12: every list is < 4096 pages, so each is forced to
    // min(size, 32) before the fraction: the hot file lists get scanned.
    let inp = input();
    let nr = ForcePerLru::default().get_scan_count(0, &inp);
    let (_, frac, denom) = fract_3x(&inp, &mut RecentRotated::default());
    assert_eq!(nr, [32 * frac[0] / denom, 32 * frac[0] / denom, 20 * frac[1] / denom, 10 * frac[1] / denom]);
    assert!(nr[2] > 0 && nr[3] > 0);
}

#[test]
fn two_pass_forces_only_when_nothing_would_be_scanned() {
    let mut inp = input();
    inp.sizes = [4096 * 100, 3000, 20, 10];
    let nr = TwoPass::default().get_scan_count(0, &inp);
    // Inactive anon has 100 pages to scan at priority 12: no forcing, file lists untouched.
    assert_eq!(nr[2], 0);
    assert_eq!(nr[3], 0);
    // With all lists small, the second pass forces them all.
    let inp = input();
    let nr = TwoPass::default().get_scan_count(0, &inp);
    assert_eq!(nr, ForcePerLru::default().get_scan_count(0, &inp));
    // Global direct reclaim never forces.
    let mut g = input();
    g.global = true;
    assert_eq!(TwoPass::default().get_scan_count(0, &g), [0, 0, 0, 0]);
}

#[test]
fn fract_follows_rotation_and_halves_history() {
    let mut inp = input();
    inp.sizes = [4096 * 8, 0, 4096 * 8, 0];
    let mut st = RecentRotated { recent_scanned: [100, 100], recent_rotated: [99, 0] };
    let (mode, f, _) = fract_3x(&inp, &mut st);
    assert_eq!(mode, Mode::Fract);
    // anon rotated almost everything it scanned: file gets far more pressure.
    assert_eq!(f, [60 * 101 / 100, 140 * 101]);
    // History larger than a quarter of the list is halved.
    let mut st = RecentRotated { recent_scanned: [9000, 10], recent_rotated: [4000, 0] };
    fract_3x(&inp, &mut st);
    assert_eq!((st.recent_scanned[0], st.recent_rotated[0]), (4500, 2000));
}

#[test]
fn modes() {
    let mut inp = input();
    inp.can_swap = false;
    assert_eq!(fract_3x(&inp, &mut RecentRotated::default()).0, Mode::File);
    inp.can_swap = true;
    inp.priority = 0;
    assert_eq!(fract_3x(&inp, &mut RecentRotated::default()).0, Mode::Equal);
    inp.priority = 3;
    inp.global = true;
    inp.free = 10;
    assert_eq!(fract_3x(&inp, &mut RecentRotated::default()).0, Mode::Anon, "file + free <= high");
    inp.free = 10_000;
    inp.inactive_file_low = false;
    assert_eq!(fract_3x(&inp, &mut RecentRotated::default()).0, Mode::File);
}

#[test]
fn cost_model_weights_types_by_cost() {
    let mut inp = input();
    inp.global = true;
    inp.sizes = [1 << 20, 0, 1 << 20, 0];
    inp.priority = 4;
    inp.anon_cost = 1000;
    inp.file_cost = 0;
    let nr = Cost::default().get_scan_count(0, &inp);
    // a = 2000, f = 1000, t = 3000: ap = 60*3001/2001 = 89, fp = 140*3001/1001 = 419.
    let scan = (1u64 << 20) >> 4;
    assert_eq!(nr[0], scan * 89 / (89 + 419));
    assert_eq!(nr[2], scan * 419 / (89 + 419));
    inp.cache_trim_mode = true;
    assert_eq!(Cost::default().get_scan_count(0, &inp)[0], 0);
    inp.file_is_tiny = true;
    assert_eq!(Cost::default().get_scan_count(0, &inp)[2], 0);
}

#[test]
fn the_3x_variants_balance_by_what_reclaim_reports_per_lruvec() {
    let mut inp = input();
    inp.sizes = [4096 * 8, 0, 4096 * 8, 0];
    for mut p in [ScanBalance::ForcePerLru(ForcePerLru::default()), ScanBalance::TwoPass(TwoPass::default())] {
        let even = p.get_scan_count(1, &inp);
        // Lruvec 1's anon pages rotate almost all the time: its file lists get the pressure.
        p.note_scanned(1, 0, 1000, 990);
        p.note_scanned(1, 1, 1000, 0);
        let skewed = p.get_scan_count(1, &inp);
        assert!(skewed[0] < even[0] && skewed[2] > even[2], "{}: {even:?} -> {skewed:?}", p.name());
        // Another lruvec keeps its own history.
        assert_eq!(p.get_scan_count(2, &inp), even, "{}", p.name());
        // Neither has prepare_scan_count.
        assert_eq!(p.prepare(&PrepareInput::default()), None);
    }
}

#[test]
fn the_cost_model_charges_ancestors_and_prepares_at_the_root() {
    let mut c = Cost::default();
    // Lruvec 2 (a memcg) and the root are charged; the root's cost halves once it exceeds
    // a quarter of its pages.
    c.note_cost(&[2, 0], 0, 100, |m| if m == 0 { 1000 } else { 10_000 });
    c.note_cost(&[2, 0], 1, 200, |m| if m == 0 { 1000 } else { 10_000 });
    let inp = PrepareInput { root: 2, priority: 12, root_lists: [0, 0, 1 << 13, 0], ..Default::default() };
    let p = c.prepare(&inp).unwrap();
    assert_eq!((p.anon_cost, p.file_cost), (100, 200));
    let root = c.prepare(&PrepareInput { root: 0, ..inp.clone() }).unwrap();
    assert_eq!((root.anon_cost, root.file_cost), (50, 100), "halved when 300 > 1000 / 4");
    // Refaults unchanged and lists not low: no deactivation, so the inactive file list is
    // trimmed alone (cache trim mode, it has 2 pages to scan at priority 12).
    assert_eq!(p.may_deactivate, [false, false]);
    assert!(p.cache_trim_mode);
    // File refaults since the last reclaim: file may be deactivated, no cache trim.
    let q = c.prepare(&PrepareInput { refaults: [0, 5], ..inp.clone() }).unwrap();
    assert_eq!(q.may_deactivate, [false, true]);
    assert!(!q.cache_trim_mode);
    let f = c.prepare(&PrepareInput { force_deactivate: true, ..inp }).unwrap();
    assert_eq!(f.may_deactivate, [true, true]);
}
