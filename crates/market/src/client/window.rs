//! The window a buyer asks for, checked before anything is planned or sent: on the assets'
//! time grid (the market splits assets only at grid points) and not in the past (a reservation
//! for time already gone is paid for nothing). The default start is the next grid point.

use super::{ClientError, Window};

/// The longest window a reservation can hold (s): Hummingbird's ResDuration, in the flyover
/// hop field and in `ResInfo`, is 16 bits, and an AS refuses to redeem a longer interval, so
/// the buyer would pay for assets it cannot use.
pub const MAX_RESERVATION_S: u64 = u16::MAX as u64;

/// The first point of the `granularity`-second grid strictly after `now` (a start at `now`
/// itself would be in the past by the time the purchase is mined).
pub fn next_grid_point(now: u64, granularity: u64) -> Result<u64, ClientError> {
    let g = granularity.max(1);
    (now / g).checked_add(1).and_then(|k| k.checked_mul(g)).ok_or(ClientError::TimeOverflow { start: now, duration: g })
}

/// `[start, start + duration) × bandwidth`; a sum past the largest time is a named error.
pub fn window(start: u64, duration: u64, bandwidth: u64) -> Result<Window, ClientError> {
    let expiry = start.checked_add(duration).ok_or(ClientError::TimeOverflow { start, duration })?;
    Ok(Window { start, expiry, bandwidth })
}

/// Rejects a window that is empty or longer than a reservation can be ([`MAX_RESERVATION_S`]):
/// what any plan needs, whatever the clock.
pub fn check_length(w: Window) -> Result<(), ClientError> {
    if w.expiry <= w.start {
        return Err(ClientError::EmptyInterval(w.start, w.expiry));
    }
    let duration = w.expiry - w.start;
    if duration > MAX_RESERVATION_S {
        return Err(ClientError::TooLong { duration });
    }
    Ok(())
}

/// Rejects a window that is empty, longer than a reservation can be, off the
/// `granularity`-second grid or starts before `now`.
pub fn check_window(w: Window, granularity: u64, now: u64) -> Result<(), ClientError> {
    check_length(w)?;
    let g = granularity.max(1);
    if let Some(time) = [w.start, w.expiry].into_iter().find(|t| t % g != 0) {
        return Err(ClientError::OffGrid { time, granularity: g });
    }
    if w.start < now {
        return Err(ClientError::WindowInPast { start: w.start, now, next: next_grid_point(now, g)? });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_003_630;

    #[test]
    fn the_default_start_is_the_next_grid_point() {
        assert_eq!(next_grid_point(NOW, 60).unwrap(), 1_800_003_660);
        assert_eq!(next_grid_point(1_800_003_600, 60).unwrap(), 1_800_003_660);
        assert!(matches!(next_grid_point(u64::MAX, 60), Err(ClientError::TimeOverflow { .. })));
    }

    #[test]
    fn past_off_grid_and_overflowing_windows_are_named() {
        let ok = window(1_800_003_660, 600, 1000).unwrap();
        check_window(ok, 60, NOW).unwrap();
        let past = window(1_800_003_600, 600, 1000).unwrap();
        let e = check_window(past, 60, NOW).unwrap_err();
        assert!(matches!(e, ClientError::WindowInPast { next: 1_800_003_660, .. }), "{e:?}");
        assert!(e.to_string().contains("2027-01-15T09:01:00Z"), "{e}");
        let off = window(1_800_003_690, 600, 1000).unwrap();
        let e = check_window(off, 60, NOW).unwrap_err();
        assert!(matches!(e, ClientError::OffGrid { time: 1_800_003_690, granularity: 60 }), "{e:?}");
        assert!(e.to_string().contains("grid of 1 min"), "{e}");
        let short = window(1_800_003_660, 90, 1000).unwrap();
        assert!(matches!(check_window(short, 60, NOW), Err(ClientError::OffGrid { time: 1_800_003_750, .. })));
        assert!(matches!(window(u64::MAX - 10, 600, 1), Err(ClientError::TimeOverflow { .. })));
        assert!(matches!(check_window(window(NOW, 0, 1).unwrap(), 60, 0), Err(ClientError::EmptyInterval(..))));
    }

    /// A reservation's duration is 16 bits on the wire: the longest window is 65 535 s, and a
    /// longer one is refused before anything is bought (the AS could not redeem it).
    #[test]
    fn a_window_longer_than_a_reservation_can_be_is_refused() {
        let start = 1_800_003_660;
        check_window(window(start, MAX_RESERVATION_S, 1000).unwrap(), 1, NOW).unwrap();
        let e = check_window(window(start, MAX_RESERVATION_S + 1, 1000).unwrap(), 1, NOW).unwrap_err();
        assert!(matches!(e, ClientError::TooLong { duration: 65_536 }), "{e:?}");
        assert!(e.to_string().contains("65535 s"), "{e}");
        // On the default grid the longest window is 65 520 s; a day is refused.
        check_window(window(start, 65_520, 1000).unwrap(), 60, NOW).unwrap();
        assert!(matches!(
            check_window(window(start, 86_400, 1000).unwrap(), 60, NOW),
            Err(ClientError::TooLong { .. })
        ));
    }
}
