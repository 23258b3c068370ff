//! Criterion benchmarks of the per-packet data-plane operations (the same cases as
//! `aviary bench`, with criterion's statistics).

use std::hint::black_box;

use aviary_hummingbird::crypto::{flyover_block, AuthKey, ResInfo, SecretValue};
use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{RouterParams, Source};
use aviary_scion::{HopMacKey, ScionView};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const T0: u32 = 1_750_000_000;
const NOW: u64 = T0 as u64 * 1_000_000_000 + 200_000_000;

fn crypto(c: &mut Criterion) {
    let key = HopMacKey::new(&[7; 16]);
    c.bench_function("hop mac (1 AES block)", |b| b.iter(|| key.hop_mac(black_box(0x1234), T0, 63, 1, 2)));
    let sv = SecretValue::new(&[9; 16]);
    let res = ResInfo { ingress: 1, egress: 2, res_id: 5, bw: 300, start: T0, duration: 60 };
    c.bench_function("A_K derivation", |b| b.iter(|| sv.auth_key(black_box(&res))));
    let ak = sv.auth_key(&res);
    c.bench_function("A_K key expansion", |b| b.iter(|| AuthKey::new(black_box(&ak))));
    let k = AuthKey::new(&ak);
    let block = flyover_block([0, 1, 0xff, 0, 0, 0, 1, 0x10], 500, 10, 200, 42);
    c.bench_function("flyover mac", |b| b.iter(|| k.flyover_mac(black_box(&block))));
}

fn router(c: &mut Criterion) {
    let chain = Chain::new(5, T0 - 60);
    let mut pkt = chain.standard_packet(100);
    for i in 0..2 {
        chain.router(i, RouterParams::default()).process(&mut pkt, Chain::forward_ingress(i), NOW);
    }
    let mut r = chain.router(2, RouterParams::default());
    c.bench_function("scion hop, router", |b| {
        b.iter_batched_ref(|| pkt.clone(), |p| r.process(p, Chain::forward_ingress(2), NOW), BatchSize::SmallInput)
    });

    let res = [(2, chain.grant(2, 77, 1023, T0 - 10, 3600))];
    let mut pkt = chain.hbird_packet(&res, T0, 100).unwrap();
    Source::new(&pkt, &[res[0].1]).unwrap().stamp(&mut pkt, NOW).unwrap();
    for i in 0..2 {
        chain.router(i, RouterParams::default()).process(&mut pkt, Chain::forward_ingress(i), NOW);
    }
    let mut r = chain.router(2, RouterParams::default());
    c.bench_function("hummingbird flyover hop, router", |b| {
        b.iter_batched_ref(|| pkt.clone(), |p| r.process(p, Chain::forward_ingress(2), NOW), BatchSize::SmallInput)
    });

    // The same packet at a router in a key rotation's overlap (its keys are the current ones):
    // the previous keys must cost a current-key packet nothing.
    let before = Chain::with_key_generation(5, T0 - 60, 9);
    let mut r = before.router(2, RouterParams::default());
    r.rotate_secret(&chain.ases[2].master_secret, NOW + 3600 * 1_000_000_000);
    c.bench_function("hummingbird flyover hop, router, in a rotation's overlap", |b| {
        b.iter_batched_ref(|| pkt.clone(), |p| r.process(p, Chain::forward_ingress(2), NOW), BatchSize::SmallInput)
    });
}

fn source(c: &mut Criterion) {
    for flyovers in [1, 2, 4, 8] {
        let chain = Chain::new(flyovers.max(2), T0 - 60);
        let res: Vec<_> = (0..flyovers).map(|i| (i, chain.grant(i, i as u32, 800, T0 - 10, 3600))).collect();
        let mut pkt = chain.hbird_packet(&res, T0, 500).unwrap();
        assert!(ScionView::new_checked(&pkt[..]).is_ok());
        let mut src = Source::new(&pkt, &res.iter().map(|r| r.1).collect::<Vec<_>>()).unwrap();
        c.bench_function(&format!("source stamp, {flyovers} flyovers, 500 B"), |b| {
            b.iter(|| src.stamp(black_box(&mut pkt), NOW).unwrap())
        });
    }
}

criterion_group!(benches, crypto, router, source);
criterion_main!(benches);
