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
    let mut st = ReclaimStat::default();
    let nr = ForcePerLru.get_scan_count(&inp, &mut st);
    let (_, frac, denom) = fract_3x(&inp, &mut ReclaimStat::default());
    assert_eq!(nr, [32 * frac[0] / denom, 32 * frac[0] / denom, 20 * frac[1] / denom, 10 * frac[1] / denom]);
    assert!(nr[2] > 0 && nr[3] > 0);
}

#[test]
fn two_pass_forces_only_when_nothing_would_be_scanned() {
    let mut inp = input();
    inp.sizes = [4096 * 100, 3000, 20, 10];
    let mut st = ReclaimStat::default();
    let nr = TwoPass.get_scan_count(&inp, &mut st);
    // Inactive anon has 100 pages to scan at priority 12: no forcing, file lists untouched.
    assert_eq!(nr[2], 0);
    assert_eq!(nr[3], 0);
    // With all lists small, the second pass forces them all.
    let inp = input();
    let nr = TwoPass.get_scan_count(&inp, &mut ReclaimStat::default());
    assert_eq!(nr, ForcePerLru.get_scan_count(&inp, &mut ReclaimStat::default()));
    // Global direct reclaim never forces.
    let mut g = input();
    g.global = true;
    assert_eq!(TwoPass.get_scan_count(&g, &mut ReclaimStat::default()), [0, 0, 0, 0]);
}

#[test]
fn fract_follows_rotation_and_halves_history() {
    let mut inp = input();
    inp.sizes = [4096 * 8, 0, 4096 * 8, 0];
    let mut st = ReclaimStat { recent_scanned: [100, 100], recent_rotated: [99, 0], ..Default::default() };
    let (mode, f, _) = fract_3x(&inp, &mut st);
    assert_eq!(mode, Mode::Fract);
    // anon rotated almost everything it scanned: file gets far more pressure.
    assert_eq!(f, [60 * 101 / 100, 140 * 101]);
    // History larger than a quarter of the list is halved.
    let mut st = ReclaimStat { recent_scanned: [9000, 10], recent_rotated: [4000, 0], ..Default::default() };
    fract_3x(&inp, &mut st);
    assert_eq!((st.recent_scanned[0], st.recent_rotated[0]), (4500, 2000));
}

#[test]
fn modes() {
    let mut inp = input();
    inp.can_swap = false;
    assert_eq!(fract_3x(&inp, &mut ReclaimStat::default()).0, Mode::File);
    inp.can_swap = true;
    inp.priority = 0;
    assert_eq!(fract_3x(&inp, &mut ReclaimStat::default()).0, Mode::Equal);
    inp.priority = 3;
    inp.global = true;
    inp.free = 10;
    assert_eq!(fract_3x(&inp, &mut ReclaimStat::default()).0, Mode::Anon, "file + free <= high");
    inp.free = 10_000;
    inp.inactive_file_low = false;
    assert_eq!(fract_3x(&inp, &mut ReclaimStat::default()).0, Mode::File);
}

#[test]
fn cost_model_weights_types_by_cost() {
    let mut inp = input();
    inp.global = true;
    inp.sizes = [1 << 20, 0, 1 << 20, 0];
    inp.priority = 4;
    inp.anon_cost = 1000;
    inp.file_cost = 0;
    let nr = Cost.get_scan_count(&inp, &mut ReclaimStat::default());
    // a = 2000, f = 1000, t = 3000: ap = 60*3001/2001 = 89, fp = 140*3001/1001 = 419.
    let scan = (1u64 << 20) >> 4;
    assert_eq!(nr[0], scan * 89 / (89 + 419));
    assert_eq!(nr[2], scan * 419 / (89 + 419));
    inp.cache_trim_mode = true;
    assert_eq!(Cost.get_scan_count(&inp, &mut ReclaimStat::default())[0], 0);
    inp.file_is_tiny = true;
    assert_eq!(Cost.get_scan_count(&inp, &mut ReclaimStat::default())[2], 0);
}
