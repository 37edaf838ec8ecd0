//! Hostile packets into a live rank: random bytes, truncated and corrupted packets, and
//! well-formed packets with valid checksums that forge keys, addresses, PDIDs, geometry, read
//! responses and control packets. The rank must stay up, reject them (counted in
//! `RuntimeStats::rx_rejected` / the engine's `malformed_dropped`, or answered with protection
//! NACKs), write no byte of its memory, and still carry legitimate transfers, also transfers
//! that are in flight while the forgeries arrive.
//!
//! Ranks: 0 is the victim (a `Runtime`), 1 a legitimate peer (a `Runtime`), 2 the attacker: a
//! bare in-memory transport endpoint that sends whatever bytes it likes.

use std::time::Duration;

use unpinned_live::transport::mem::{network, MemTransport};
use unpinned_live::transport::Transport;
use unpinned_live::{Config, Perms, RemoteKey, Runtime};
use unpinned_os::mapping::Mapping;
use unpinned_wire::part::{DataFlags, NackReason, PartRepr};

/// xorshift64; the seed is printed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn emit(r: &PartRepr) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).expect("emit a forged packet");
    b
}

/// A one-block data packet of `len` bytes (`len` <= packet size) for `[base, base+len)`.
fn data(
    pdid: u16,
    rkey: RemoteKey,
    id: u32,
    read_response: bool,
    base: u64,
    payload: &[u8],
) -> Vec<u8> {
    emit(&PartRepr::Data {
        pdid,
        rkey,
        transfer_id: id,
        block_id: 0,
        block_seq: 0,
        flags: DataFlags {
            read_response,
            ..DataFlags::default()
        },
        offset: 0,
        block_len: payload.len() as u32,
        xfer_base: base,
        xfer_len: payload.len() as u64,
        payload,
    })
}

fn control_floods(rng: &mut Rng, ids: std::ops::Range<u32>) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for transfer_id in ids {
        for block_id in 0..4 {
            for block_seq in 0..3u16 {
                for read_response in [false, true] {
                    v.push(emit(&PartRepr::Ack {
                        transfer_id,
                        block_id,
                        block_seq,
                        read_response,
                    }));
                    v.push(emit(&PartRepr::Err {
                        transfer_id,
                        block_id,
                        block_seq,
                        read_response,
                    }));
                    for reason in [
                        NackReason::Crc,
                        NackReason::PageFault,
                        NackReason::Protection,
                        NackReason::ReadRefused,
                    ] {
                        let addr = rng.next();
                        v.push(emit(&PartRepr::Nack {
                            transfer_id,
                            block_id,
                            block_seq,
                            read_response,
                            reason,
                            addr,
                        }));
                    }
                }
            }
        }
    }
    v
}

const PDID: u16 = 1;
const LEN: usize = 256 << 10;
const RW: (usize, usize) = (64 << 10, 128 << 10);
const RO: (usize, usize) = (128 << 10, 192 << 10);

#[test]
fn hostile_packets_are_rejected_and_write_nothing() {
    let seed = 0x0bad_5eed_u64;
    println!("hostile: seed {seed:#x}");
    let mut rng = Rng(seed);
    let cfg = |r| Config::new(r, 3);
    let mut net = network(3, cfg(0).max_packet());
    let mut attacker: MemTransport = net.pop().expect("rank 2");
    let mut it = net.into_iter();
    let victim = Runtime::new(cfg(0), Box::new(it.next().expect("rank 0"))).unwrap();
    let peer = Runtime::new(cfg(1), Box::new(it.next().expect("rank 1"))).unwrap();

    // Victim memory: one mapping, present, with a pattern; [64K,128K) exposed RW, [128K,192K)
    // exposed read-only, the rest private. A second private mapping holds "secrets".
    let mem = Mapping::anon(LEN).unwrap();
    let secret = Mapping::anon(64 << 10).unwrap();
    let mut want = rng.bytes(LEN);
    let secret_bytes = rng.bytes(secret.len());
    // SAFETY: neither mapping is exposed yet.
    unsafe {
        mem.as_mut_slice().copy_from_slice(&want);
        secret.as_mut_slice().copy_from_slice(&secret_bytes);
    }
    let base = mem.addr();
    let (rw, ro) = (base + RW.0 as u64, base + RO.0 as u64);
    // SAFETY: the mappings outlive the runtimes (dropped at the end of the test, after them
    // since declared before); we read them only when no transfer is in flight.
    let key = unsafe {
        victim
            .expose(rw as *const u8, RW.1 - RW.0, Perms::RW)
            .unwrap()
    };
    // SAFETY: as above.
    let ro_key = unsafe {
        victim
            .expose(ro as *const u8, RO.1 - RO.0, Perms::R)
            .unwrap()
    };
    let wrong = key ^ 0x5a5a_0001;
    let page = vec![0xeeu8; 256];
    let mut send = |pkts: &[Vec<u8>]| {
        for p in pkts {
            attacker.send(0, p).expect("attacker sends");
        }
    };

    // 1. Bytes that are no packet at all: random, truncated, corrupted, padded.
    let mut malformed = Vec::new();
    let max = cfg(0).max_packet();
    for _ in 0..5000 {
        let n = (rng.next() % (max as u64 + 1)) as usize;
        malformed.push(rng.bytes(n));
    }
    let valid = data(PDID, key, 7, false, rw, &page);
    for n in 0..valid.len() {
        malformed.push(valid[..n].to_vec());
    }
    // A valid packet followed by junk: the parser rejects trailing bytes, and the transport must
    // not cut them off (it used to truncate to the receive buffer, which made this one valid).
    // Longer than any packet: the transport drops these (they are not counted as rejected).
    let mut oversized = Vec::new();
    for extra in [1, 7, 300] {
        let mut padded = valid.clone();
        padded.extend(std::iter::repeat_n(0u8, extra));
        oversized.push(padded);
    }
    for _ in 0..200 {
        let n = max + 1 + (rng.next() % 2000) as usize;
        oversized.push(rng.bytes(n));
    }
    for _ in 0..2000 {
        let mut p = valid.clone();
        let bit = (rng.next() % (p.len() as u64 * 8)) as usize;
        p[bit / 8] ^= 1 << (bit % 8);
        malformed.push(p);
    }
    let ctrl = control_floods(&mut rng, 0..4);
    for c in &ctrl {
        for n in 0..c.len() {
            malformed.push(c[..n].to_vec());
        }
    }
    send(&malformed);
    send(&oversized);

    // 2. Well-formed, valid checksum, forged: every one must be refused.
    let secret_addr = secret.addr();
    let mut forged = vec![
        data(PDID, wrong, 10, false, rw, &page),     // wrong key
        data(PDID, 0, 11, false, rw, &page),         // no key
        data(PDID, key, 12, false, rw - 256, &page), // just before the exposure
        data(PDID, key, 13, false, rw + (RW.1 - RW.0) as u64 - 100, &page), // straddles its end
        data(PDID, key, 14, false, rw + (RW.1 - RW.0) as u64, &page), // just past it
        data(PDID, key, 15, false, base, &page),     // private, same mapping
        data(PDID, key, 16, false, secret_addr, &page), // another mapping
        data(PDID, key, 17, false, 0, &page),        // null
        data(PDID, key, 18, false, u64::MAX - 255, &page), // wraps around
        data(PDID + 1, key, 19, false, rw, &page),   // wrong PDID
        data(PDID, ro_key, 20, false, ro, &page),    // read-only exposure
        data(PDID, key, 21, true, rw, &page),        // unsolicited read response
        data(PDID, key, 22, true, secret_addr, &page), // ... aimed at a secret
    ];
    for id in 0..64 {
        // Unsolicited read responses for every low transfer id, any flags.
        forged.push(data(PDID, rng.next() as u32, id, true, rng.next(), &page));
    }
    // Geometry lies: payload shorter than the block says, unaligned offset, block longer than
    // a block, block past the transfer, a middle block that is not full.
    let geo = |offset: u64, block_id: u32, block_len: u32, xfer_len: u64, payload: &[u8]| {
        emit(&PartRepr::Data {
            pdid: PDID,
            rkey: key,
            transfer_id: 30,
            block_id,
            block_seq: 0,
            flags: DataFlags::default(),
            offset,
            block_len,
            xfer_base: rw,
            xfer_len,
            payload,
        })
    };
    let geometry = [
        geo(0, 0, 512, 512, &page[..100]),
        geo(3, 0, 512, 512, &page),
        geo(0, 0, 1 << 20, 1 << 20, &page),
        geo(0, 0, 256, 128, &page),
        geo(16384, 1, 256, 1 << 20, &page),
        geo(1 << 40, 0, 256, 256, &page),
    ];
    forged.extend(geometry.iter().cloned());
    // Read requests that must be refused: wrong key, out of range, private and secret memory,
    // absurd lengths, write-only... (the response would go to the attacker).
    let rreq = |rkey, remote_addr, len| {
        emit(&PartRepr::ReadReq {
            pdid: PDID,
            rkey,
            transfer_id: 40,
            reply_pdid: PDID,
            remote_addr,
            local_addr: 0x1000,
            len,
        })
    };
    forged.extend([
        rreq(wrong, rw, 256),
        rreq(key, rw - 1, 256),
        rreq(key, rw, (RW.1 - RW.0) as u64 + 1),
        rreq(key, base, 256),
        rreq(key, secret_addr, 256),
        rreq(ro_key, ro - 4096, 8192),
        rreq(key, rw, u64::MAX),
        rreq(key, u64::MAX - 10, 100),
    ]);
    send(&forged);
    send(&ctrl);

    // 3. Legitimate traffic while forged control packets and read responses for the same
    //    transfer ids arrive: the peer writes into the victim, the victim writes into the
    //    peer's fresh memory (page faults there, so the transfer lasts a while) and reads it.
    let dst = Mapping::anon(1 << 20).unwrap();
    // SAFETY: dst outlives the runtimes; read only after the transfers completed.
    let dkey = unsafe { peer.expose(dst.ptr(), dst.len(), Perms::RW).unwrap() };
    let src = rng.bytes(1 << 20);
    // SAFETY: `src` lives until the completion, waited for below.
    let wid = unsafe {
        victim
            .write(1, src.as_ptr(), dst.addr(), dkey, src.len())
            .unwrap()
    };
    let mut flood = control_floods(&mut rng, 0..16);
    for id in 0..16 {
        flood.push(data(PDID, 0, id, true, 0, &page));
    }
    send(&flood);
    victim
        .wait(wid)
        .expect("the victim's write survives forged control packets");
    let back = Mapping::anon(1 << 20).unwrap();
    // SAFETY: `back` is untouched until the read completed.
    let rid = unsafe {
        victim
            .read(1, back.ptr(), dst.addr(), dkey, 1 << 20)
            .unwrap()
    };
    send(&flood);
    victim
        .wait(rid)
        .expect("the victim's read survives forged read responses");
    // SAFETY: both transfers completed.
    unsafe {
        assert!(
            dst.as_slice() == &src[..],
            "victim -> peer write byte for byte"
        );
        assert!(
            back.as_slice() == &src[..],
            "peer -> victim read byte for byte"
        );
    }

    // 4. A legitimate write into the victim (also a fence: the in-memory inbox is FIFO, so
    //    everything the attacker sent before has been handled once it completes).
    let legit = rng.bytes(5000);
    let at = RW.0 + 1000;
    peer.write_blocking(0, &legit, base + at as u64, key)
        .expect("legitimate write");
    want[at..at + legit.len()].copy_from_slice(&legit);
    let mut out = vec![0u8; 5000];
    peer.read_blocking(0, &mut out, base + at as u64, key)
        .expect("legitimate read");
    assert_eq!(out, legit);

    // Nothing else changed, in the victim's exposed, private or secret memory.
    // SAFETY: no transfer is in flight.
    unsafe {
        let got = mem.as_slice();
        if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
            let n = got[i..]
                .iter()
                .zip(&want[i..])
                .take_while(|(a, b)| a != b)
                .count();
            panic!(
                "victim memory changed at offset {i:#x}, {n} bytes, now {:x?} (exposed RW is [{:#x}, {:#x}))",
                &got[i..i + n.min(16)],
                RW.0,
                RW.1
            );
        }
        assert!(
            secret.as_slice() == &secret_bytes[..],
            "secret memory changed"
        );
    }
    assert!(
        victim.poll_completion().is_none(),
        "forgeries made no completion"
    );
    let s = victim.stats().unwrap();
    println!("victim stats: {s:?}");
    assert!(
        s.rx_rejected >= malformed.len() as u64,
        "{} malformed packets sent, {} rejected",
        malformed.len(),
        s.rx_rejected
    );
    assert!(
        s.engine.malformed_dropped >= (malformed.len() + geometry.len()) as u64,
        "{s:?}"
    );
    assert!(s.engine.nacks_protection_sent > 0, "{s:?}");
    // The victim is still up and answers.
    let again = rng.bytes(100);
    peer.write_blocking(0, &again, rw, key)
        .expect("the victim still answers");
    std::thread::sleep(Duration::from_millis(10));
    drop(victim);
    drop(peer);
}

/// Over UDP, datagrams from addresses that are not ranks of the job are ignored, whatever they
/// contain (here: valid forged writes with the right key).
#[test]
fn udp_strangers_are_ignored() {
    use std::net::UdpSocket;
    use unpinned_live::transport::udp::{free_local_addrs, UdpTransport};
    let addrs = free_local_addrs(2).unwrap();
    let cfg = |r| Config::new(r, 2);
    let rts: Vec<Runtime> = (0..2)
        .map(|r| {
            let t = UdpTransport::bind(r, addrs.clone(), cfg(r).max_packet()).unwrap();
            Runtime::new(cfg(r), Box::new(t)).unwrap()
        })
        .collect();
    let mem = Mapping::anon(64 << 10).unwrap();
    // SAFETY: not exposed yet.
    unsafe { mem.as_mut_slice().fill(0x11) };
    // SAFETY: mem outlives the runtimes; read when nothing is in flight.
    let key = unsafe { rts[0].expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = Rng(0x57a4_6e12);
    let page = vec![0xeeu8; 256];
    for i in 0..500u32 {
        stranger
            .send_to(&data(PDID, key, i, false, mem.addr(), &page), addrs[0])
            .unwrap();
        stranger
            .send_to(&rng.bytes((rng.0 % 300) as usize), addrs[0])
            .unwrap();
    }
    let legit = rng.bytes(1000);
    rts[1]
        .write_blocking(0, &legit, mem.addr() + 4096, key)
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: no transfer in flight.
    let got = unsafe { mem.as_slice() };
    assert!(got[4096..5096] == legit[..]);
    assert!(
        got[..4096].iter().chain(&got[5096..]).all(|&b| b == 0x11),
        "a stranger wrote"
    );
}
