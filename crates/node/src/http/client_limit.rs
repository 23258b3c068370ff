//! Requests per client, for an endpoint whose every request costs others something (a GLWP
//! discovery spends the AS's request budget at its neighbour): one token bucket per client, an
//! IPv4 address or an IPv6 /64 (what one host can change at will), sans-IO (time passed in).
//!
//! The table is bounded: when it is full, a new client takes the place of the one whose bucket
//! is fullest, which is lossless for a client that was idle long enough to be full again (a new
//! entry starts full too).

use std::collections::HashMap;
use std::net::IpAddr;

const NS_PER_S: u64 = 1_000_000_000;

/// A client's key: an IPv4 address, or the /64 of an IPv6 one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Client {
    V4(u32),
    V6(u64),
}

impl From<IpAddr> for Client {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => Client::V4(a.to_bits()),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Client::V4(v4.to_bits()),
                None => Client::V6((a.to_bits() >> 64) as u64),
            },
        }
    }
}

/// `rate` requests a second, up to `burst` at once, per client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientRate {
    pub per_s: u32,
    pub burst: u32,
}

/// A refused request: the client may ask again after this long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter {
    pub ns: u64,
}

impl RetryAfter {
    /// Whole seconds, rounded up, as HTTP's `Retry-After` takes them.
    pub fn secs(&self) -> u64 {
        self.ns.div_ceil(NS_PER_S).max(1)
    }
}

/// The token buckets of up to `max_clients` clients.
#[derive(Debug)]
pub struct ClientLimiter {
    rate: ClientRate,
    max_clients: usize,
    /// Tokens in units of 1/`NS_PER_S` of a request, and when they were counted.
    buckets: HashMap<Client, (u64, u64)>,
}

impl ClientLimiter {
    /// A limiter at `rate` (`per_s` and `burst` at least 1) for up to `max_clients` (at least 1).
    pub fn new(rate: ClientRate, max_clients: usize) -> Self {
        assert!(rate.per_s >= 1 && rate.burst >= 1 && max_clients >= 1, "a limiter that admits nothing");
        Self { rate, max_clients, buckets: HashMap::new() }
    }

    fn capacity(&self) -> u64 {
        u64::from(self.rate.burst) * NS_PER_S
    }

    /// `(tokens, then)` refilled to `now_ns`.
    fn refilled(&self, (tokens, then): (u64, u64), now_ns: u64) -> u64 {
        let earned = now_ns.saturating_sub(then).saturating_mul(u64::from(self.rate.per_s));
        tokens.saturating_add(earned).min(self.capacity())
    }

    /// Takes one request of `client` at `now_ns`, or says when it may ask again.
    pub fn admit(&mut self, client: IpAddr, now_ns: u64) -> Result<(), RetryAfter> {
        let key = Client::from(client);
        if !self.buckets.contains_key(&key) && self.buckets.len() >= self.max_clients {
            self.evict_fullest(now_ns);
        }
        let full = (self.capacity(), now_ns);
        let entry = *self.buckets.get(&key).unwrap_or(&full);
        let tokens = self.refilled(entry, now_ns);
        // The clock may step back (a clock set by the operator): count from the later time.
        let at = now_ns.max(entry.1);
        match tokens.checked_sub(NS_PER_S) {
            Some(left) => {
                self.buckets.insert(key, (left, at));
                Ok(())
            }
            None => {
                self.buckets.insert(key, (tokens, at));
                Err(RetryAfter { ns: (NS_PER_S - tokens).div_ceil(u64::from(self.rate.per_s)) })
            }
        }
    }

    fn evict_fullest(&mut self, now_ns: u64) {
        let fullest = self.buckets.iter().max_by_key(|(_, &b)| self.refilled(b, now_ns)).map(|(k, _)| *k);
        if let Some(k) = fullest {
            self.buckets.remove(&k);
        }
    }

    /// Clients with a bucket.
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = NS_PER_S;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_client_gets_its_burst_then_its_rate_and_others_are_untouched() {
        let mut l = ClientLimiter::new(ClientRate { per_s: 2, burst: 3 }, 16);
        let a = ip("10.0.0.1");
        for _ in 0..3 {
            assert_eq!(l.admit(a, 0), Ok(()));
        }
        // Empty: the next token comes in half a second.
        assert_eq!(l.admit(a, 0), Err(RetryAfter { ns: S / 2 }));
        assert_eq!(l.admit(a, S / 4), Err(RetryAfter { ns: S / 4 }));
        assert_eq!(l.admit(a, S / 2), Ok(()));
        assert!(l.admit(a, S / 2).is_err());
        // Another host has a bucket of its own.
        for _ in 0..3 {
            assert_eq!(l.admit(ip("10.0.0.2"), S / 2), Ok(()));
        }
        // After a long pause the burst is back, never more.
        for _ in 0..3 {
            assert_eq!(l.admit(a, 100 * S), Ok(()));
        }
        assert!(l.admit(a, 100 * S).is_err());
        assert_eq!(RetryAfter { ns: S / 2 }.secs(), 1);
        assert_eq!(RetryAfter { ns: 3 * S + 1 }.secs(), 4);
    }

    #[test]
    fn an_ipv6_host_is_its_64_and_a_mapped_ipv4_address_its_ipv4_one() {
        let mut l = ClientLimiter::new(ClientRate { per_s: 1, burst: 1 }, 16);
        assert!(l.admit(ip("2001:db8:1:2::1"), 0).is_ok());
        assert!(l.admit(ip("2001:db8:1:2:ffff::9"), 0).is_err(), "the same /64");
        assert!(l.admit(ip("2001:db8:1:3::1"), 0).is_ok(), "another /64");
        assert!(l.admit(ip("192.0.2.7"), 0).is_ok());
        assert!(l.admit(ip("::ffff:192.0.2.7"), 0).is_err(), "the same IPv4 host");
    }

    #[test]
    fn a_clock_that_steps_back_earns_nothing() {
        let mut l = ClientLimiter::new(ClientRate { per_s: 1, burst: 1 }, 16);
        let a = ip("10.0.0.1");
        assert!(l.admit(a, 10 * S).is_ok());
        assert!(l.admit(a, 5 * S).is_err());
        assert!(l.admit(a, 10 * S + S / 2).is_err());
        assert!(l.admit(a, 11 * S).is_ok());
    }

    proptest! {
        /// A client gets at most its burst plus its rate over the whole run (40 clients, a
        /// table of 64: none is evicted, which would let it come back full).
        #[test]
        fn the_table_is_bounded_and_a_client_is_held_to_its_rate(
            requests in proptest::collection::vec((0u8..40, 0u64..50_000_000), 1..400),
        ) {
            let rate = ClientRate { per_s: 5, burst: 4 };
            let mut l = ClientLimiter::new(rate, 64);
            let mut now = 0;
            let mut admitted = [0u64; 40];
            for (client, step) in &requests {
                now += step;
                if l.admit(IpAddr::from([10, 0, 0, *client]), now).is_ok() {
                    admitted[usize::from(*client)] += 1;
                }
                prop_assert!(l.clients() <= 64);
            }
            let bound = u64::from(rate.burst) + now * u64::from(rate.per_s) / S;
            prop_assert!(admitted.iter().all(|&n| n <= bound), "{admitted:?} against {bound}");
        }
    }

    #[test]
    fn a_full_table_gives_way_to_a_new_client_at_the_expense_of_the_fullest_bucket() {
        let mut l = ClientLimiter::new(ClientRate { per_s: 1, burst: 2 }, 2);
        let (a, b, c) = (ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3"));
        l.admit(a, 0).unwrap();
        l.admit(a, 0).unwrap();
        l.admit(b, 0).unwrap();
        // The table is full; b has a token left and a none, so b makes room for c.
        l.admit(c, 0).unwrap();
        assert_eq!(l.clients(), 2);
        assert!(l.admit(a, 0).is_err(), "a kept its empty bucket");
    }
}
