//! Key rotation without disruption: a key and, for an overlap window after a rotation, the key
//! it replaced. Hop fields and reservations issued under the old key stay valid until they
//! expire, so a router that switched keys at once would drop them; during the overlap a packet
//! that fails under the current key is verified again under the previous one (and only then:
//! packets under the current key cost nothing extra).

/// The current key of one kind and, until a deadline, the one before it.
#[derive(Clone, Debug)]
pub struct KeyGenerations<K> {
    current: K,
    previous: Option<(K, u64)>,
}

impl<K> KeyGenerations<K> {
    /// A single key, no overlap.
    pub fn new(current: K) -> Self {
        Self { current, previous: None }
    }

    /// The key that signs and verifies first.
    #[inline]
    pub fn current(&self) -> &K {
        &self.current
    }

    /// The replaced key if it still verifies at `now_ns` (strictly before its deadline).
    #[inline]
    pub fn previous_at(&self, now_ns: u64) -> Option<&K> {
        match &self.previous {
            Some((k, until_ns)) if now_ns < *until_ns => Some(k),
            _ => None,
        }
    }

    /// `next` becomes the current key; the current one verifies until `previous_until_ns`. A
    /// key from an earlier rotation still in its overlap is forgotten: only one generation back
    /// is kept. Rotating to the current key changes nothing, overlap included: the same
    /// rotation told twice (an operator retrying after a timeout) would otherwise make the key
    /// its own previous one and drop, at once, everything still issued under the real one.
    pub fn rotate(&mut self, next: K, previous_until_ns: u64)
    where
        K: PartialEq,
    {
        if next == self.current {
            return;
        }
        let old = std::mem::replace(&mut self.current, next);
        self.previous = Some((old, previous_until_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_key_verifies_until_its_deadline_and_one_generation_back_only() {
        let mut k = KeyGenerations::new(1);
        assert_eq!(k.previous_at(0), None);
        k.rotate(2, 100);
        assert_eq!((k.current(), k.previous_at(99)), (&2, Some(&1)));
        assert_eq!(k.previous_at(100), None);
        k.rotate(3, 200);
        assert_eq!((k.current(), k.previous_at(0)), (&3, Some(&2)));
    }

    #[test]
    fn rotating_to_the_current_key_again_keeps_the_previous_key_and_its_overlap() {
        use crate::HopMacKey;
        let block = [7u8; 16];
        let (s0, s1) = (HopMacKey::new(&[1; 16]), HopMacKey::new(&[2; 16]));
        let mut k = KeyGenerations::new(s0.clone());
        k.rotate(s1.clone(), 100);
        // The same rotation again (an operator's retry), with a later deadline.
        k.rotate(HopMacKey::new(&[2; 16]), 500);
        assert_eq!(k.current().mac(&block), s1.mac(&block));
        let previous = k.previous_at(99).expect("S0 still verifies within the first overlap");
        assert_eq!(previous.mac(&block), s0.mac(&block));
        assert!(k.previous_at(100).is_none(), "the overlap is the first rotation's");
    }
}
