//! The host's CPUs as the runs see them: pinning a process to the CPUs a scenario task names
//! (`task[].cpus`, `sched_setaffinity`), and which CPU takes a disk's completion interrupts
//! (the model's `irq_cpu`).
//!
//! ```text
//!   /sys/block/vda ──► /sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda
//!                         └─ the PCI function's msi_irqs/: 35 36
//!   /proc/irq/35/virtio1-config            (not an I/O queue)
//!   /proc/irq/36/virtio1-req.0  effective_affinity_list = 1   ──► irq_cpu 1
//! ```
//!
//! And the user-mode CPU time of the children a process waited for (`children_user_ns`).
//!
//! A disk with one I/O queue completes every request on that queue's interrupt CPU; a task
//! sleeping on its I/O elsewhere is woken by an IPI. A disk with a queue per CPU (NVMe)
//! completes each request where it was submitted: no single interrupt CPU.

use crate::Error;
use std::path::Path;

/// User-mode CPU time of the children the caller waited for so far, ns
/// (`getrusage(RUSAGE_CHILDREN)`'s `ru_utime`: the scheduler's precise run time split by the
/// tick samples, where /proc's `cutime` counts whole 10 ms ticks).
pub fn children_user_ns() -> Result<u64, Error> {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct `ru` points to, live for the call.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Err(Error(format!("getrusage: {}", crate::last_os_error())));
    }
    Ok(ru.ru_utime.tv_sec as u64 * 1_000_000_000 + ru.ru_utime.tv_usec as u64 * 1000)
}

/// Pins process `pid` (0: the caller) to `cpus`.
pub fn set_affinity(pid: i32, cpus: &[u32]) -> Result<(), Error> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it for any CPU below
    // CPU_SETSIZE, which is checked first.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(Error(format!("CPU {c} is beyond the {} CPUs an affinity mask holds", libc::CPU_SETSIZE)));
        }
        // SAFETY: c < CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: set is a live cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        return Err(Error(format!(
            "sched_setaffinity to CPUs {cpus:?}: {} (this host's online CPUs: {})",
            crate::last_os_error(),
            online.trim()
        )));
    }
    Ok(())
}

/// The CPU that takes the completion interrupts of the disk whose sysfs directory is `disk`
/// (`/sys/block/vda`), when it has exactly one I/O queue interrupt bound to exactly one CPU;
/// `proc_irq` is `/proc/irq`. `None` for a disk with a queue per CPU, or when the
/// interrupts cannot be found (not a PCI MSI device).
pub fn disk_irq_cpu(disk: &Path, proc_irq: &Path) -> Option<u32> {
    let dev = disk.canonicalize().ok()?;
    let pci = dev.ancestors().find(|d| d.join("msi_irqs").is_dir())?;
    let mut io_irqs = Vec::new();
    for e in std::fs::read_dir(pci.join("msi_irqs")).ok()?.flatten() {
        let irq = e.file_name();
        let dir = proc_irq.join(&irq);
        // The irq's action is a directory named after it: virtio1-req.0, nvme0q1.
        let Some(name) = std::fs::read_dir(&dir)
            .ok()?
            .flatten()
            .filter(|a| a.path().is_dir())
            .map(|a| a.file_name().to_string_lossy().into_owned())
            .next()
        else {
            continue;
        };
        if is_io_queue(&name) {
            io_irqs.push(dir);
        }
    }
    let [one] = io_irqs.as_slice() else { return None };
    let list = std::fs::read_to_string(one.join("effective_affinity_list")).ok()?;
    list.trim().parse().ok()
}

/// Whether an interrupt action names an I/O queue (not a device's configuration or admin
/// interrupt): `virtio1-req.0`, `virtio1-request`, `nvme0q1` are; `virtio1-config` and the
/// NVMe admin queue `nvme0q0` are not.
fn is_io_queue(name: &str) -> bool {
    if name.starts_with("virtio") {
        return name.contains("-req");
    }
    if let Some(q) = name.strip_prefix("nvme").and_then(|r| r.split_once('q')).map(|(_, q)| q) {
        return q != "0";
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fake_file, temp_dir};

    #[test]
    fn io_queues_are_told_from_configuration_and_admin_interrupts() {
        for (name, io) in [
            ("virtio1-req.0", true),
            ("virtio2-request", true),
            ("virtio1-config", false),
            ("virtio0-inflate", false),
            ("nvme0q0", false),
            ("nvme0q1", true),
            ("nvme1q12", true),
            ("ahci[0000:00:1f.2]", false),
        ] {
            assert_eq!(is_io_queue(name), io, "{name}");
        }
    }

    /// A fake sysfs and /proc/irq: a disk under a PCI function with the given interrupts
    /// (number, action, effective affinity). The directory goes when the first value does.
    fn fake_disk(irqs: &[(u32, &str, &str)]) -> (crate::testutil::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let root = temp_dir("irq");
        let pci = root.join("sys/devices/pci0000:00/0000:00:02.0");
        let disk = pci.join("virtio1/block/vda");
        std::fs::create_dir_all(&disk).unwrap();
        for &(n, action, cpus) in irqs {
            fake_file(&pci, &format!("msi_irqs/{n}"), "msix\n");
            std::fs::create_dir_all(root.join(format!("proc/irq/{n}/{action}"))).unwrap();
            fake_file(&root, &format!("proc/irq/{n}/effective_affinity_list"), &format!("{cpus}\n"));
        }
        let irq = root.join("proc/irq");
        (root, disk, irq)
    }

    #[test]
    fn a_single_queue_disk_has_the_cpu_of_its_request_interrupt() {
        let (_root, disk, irq) = fake_disk(&[(35, "virtio1-config", "0"), (36, "virtio1-req.0", "1")]);
        assert_eq!(disk_irq_cpu(&disk, &irq), Some(1));
    }

    #[test]
    fn a_disk_with_a_queue_per_cpu_or_no_msi_has_no_single_interrupt_cpu() {
        let (_root, disk, irq) = fake_disk(&[(40, "nvme0q0", "0"), (41, "nvme0q1", "0"), (42, "nvme0q2", "1")]);
        assert_eq!(disk_irq_cpu(&disk, &irq), None, "two I/O queues");
        let root = temp_dir("irq-none");
        std::fs::create_dir_all(root.join("block/sda")).unwrap();
        assert_eq!(disk_irq_cpu(&root.join("block/sda"), &root.join("proc/irq")), None, "no msi_irqs");
    }

    #[test]
    fn pinning_to_one_cpu_shows_in_the_affinity_mask() {
        // A thread of its own, so the test harness's other threads keep their affinity.
        std::thread::spawn(|| {
            set_affinity(0, &[0]).unwrap();
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap();
            assert_eq!(line.split_whitespace().nth(1), Some("0"));
            let err = set_affinity(0, &[4000]).unwrap_err();
            assert!(err.0.contains("CPU 4000"), "{err}");
        })
        .join()
        .unwrap();
    }
}
