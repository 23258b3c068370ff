//! The interface between a border router process and a mechanism's sans-IO processor.
//! A router hosts one processor per mechanism and hands each packet to the processor of
//! its SCION path type; adding a mechanism to the router is one more implementation.

use crate::Verdict;

/// A mechanism's border-router processing.
pub trait Processor: Send {
    /// The SCION path types this processor handles (common header byte 8).
    fn path_types(&self) -> &'static [u8];

    /// Processes packets that arrived on `ingress` (0: from inside the AS) at `now_ns`,
    /// updating them in place; `verdicts[i]` is the verdict of `pkts[i]`.
    fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]);

    /// Changes a named runtime parameter (from the management API). A processor that does
    /// not know the name returns `Ok(false)`; a bad value is an `Err` with the reason.
    fn set_param(&mut self, name: &str, value: f64) -> Result<bool, String> {
        let _ = (name, value);
        Ok(false)
    }
}
