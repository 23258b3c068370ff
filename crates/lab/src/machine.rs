//! A one-line description of the machine a measurement ran on.

/// CPU model, core count and the AES code chosen for this CPU ([`aviary_scion::cpu::Level`]),
/// e.g. "Intel(R) Xeon(R) Processor, 2 cores, AES: AesNi".
pub fn describe() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{model}, {cores} cores, AES: {:?}", aviary_scion::cpu::level())
}
