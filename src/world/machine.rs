//! Facts of the machine this process runs on, read from `/proc` and its `PATH`. A container sees its host's
//! `/proc/cpuinfo`, `/proc/meminfo` and kernel release, so the workload image run on a node
//! reads that node's.

use crate::model::run::HostFacts;

/// This machine's CPU model, e.g. `AMD EPYC 7763 64-Core Processor`.
pub(crate) fn cpu_model() -> Option<String> {
    cpu_model_of(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The CPU model a `/proc/cpuinfo` text names: x86's `model name`, else what an Arm kernel
/// gives (`Model`, `Hardware`, or the implementer and part numbers).
pub(crate) fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    field("model name")
        .or_else(|| field("Model"))
        .or_else(|| field("Hardware"))
        .or_else(|| {
            Some(format!(
                "CPU implementer {} part {}",
                field("CPU implementer")?,
                field("CPU part")?
            ))
        })
}

/// This machine's total memory in bytes.
pub(crate) fn memory_bytes() -> Option<u64> {
    mem_total_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemTotal` of a /proc/meminfo text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        _ => None,
    }
}

/// This machine's kernel release, e.g. `6.12.48+deb13-amd64`.
pub(crate) fn kernel() -> Option<String> {
    proc_line("/proc/sys/kernel/osrelease")
}

/// This machine's host name.
pub(crate) fn hostname() -> Option<String> {
    proc_line("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
}

/// The CPUs this process may run on.
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn proc_line(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_string()).filter(|s| !s.is_empty())
}

/// Whether `program` is an executable file in a directory of this process's `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// This machine's facts, as a run records them.
pub(crate) fn host_facts() -> HostFacts {
    HostFacts {
        hostname: hostname().unwrap_or_else(|| "unknown".to_string()),
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        cpu_model: cpu_model(),
        cpus: cpus(),
        memory_bytes: memory_bytes(),
        kernel: kernel(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_is_x86s_model_name_or_what_an_arm_kernel_gives() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n\
                   model name\t: AMD EPYC 7763 64-Core Processor\nprocessor\t: 1\n\
                   model name\t: AMD EPYC 7763 64-Core Processor\n";
        assert_eq!(
            cpu_model_of(x86).as_deref(),
            Some("AMD EPYC 7763 64-Core Processor")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\
                   CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n";
        assert_eq!(
            cpu_model_of(arm).as_deref(),
            Some("CPU implementer 0x41 part 0xd0c")
        );
        let pi = "processor\t: 0\nCPU part\t: 0xd08\nHardware\t: BCM2835\n\
                  Model\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(
            cpu_model_of(pi).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        assert_eq!(cpu_model_of("processor\t: 0\n"), None);
    }

    #[test]
    fn memory_is_memtotal_in_bytes() {
        let text = "MemTotal:        8040292 kB\nMemFree:          123 kB\n";
        assert_eq!(mem_total_bytes(text), Some(8040292 * 1024));
        assert_eq!(mem_total_bytes("nothing"), None);
    }
}
