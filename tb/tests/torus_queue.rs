//! The order-v2 engine's stream queue on the `hw` evaluator, against a
//! queue per stream in Rust: random pushes and pops (one stream popped per
//! cycle, as the engine does), every stream's head and occupancy checked
//! every cycle at depths 1 to 8; and its alarm, raised by a push into a
//! full stream and by two streams popped in one cycle.

use hw::{Design, Evaluator};
use rand::Rng;
use std::collections::VecDeque;
use tb::seed::rng_for;
use torus::allreduce_v2::stream_queue;

fn queue(streams: u32, depth: u32, width: u32) -> Evaluator {
    let mut design = Design::new();
    let top = stream_queue(&mut design, streams, depth, width);
    let mut ev = Evaluator::new(&top).expect("evaluator");
    for p in [
        "push_i",
        "push_stream_i",
        "push_data_i",
        "pop_i",
        "reserve_i",
    ] {
        ev.set_int(p, 0);
    }
    ev.set_int("rst_i", 1);
    ev.step();
    ev.set_int("rst_i", 0);
    ev.eval();
    ev
}

fn int(ev: &Evaluator, port: &str) -> u64 {
    u64::try_from(ev.get(port)).expect("a narrow port")
}

fn bit(v: u64, i: usize) -> bool {
    v >> i & 1 == 1
}

#[test]
fn random_pushes_and_pops_keep_every_stream_in_order() {
    let mut rng = rng_for("random_pushes_and_pops_keep_every_stream_in_order");
    for (streams, depth) in [(1, 1), (2, 1), (1, 2), (3, 2), (4, 4), (4, 8), (2, 8)] {
        let width = 12;
        let mut ev = queue(streams, depth, width);
        let mut model: Vec<VecDeque<u64>> = vec![VecDeque::new(); streams as usize];
        let what = format!("k{streams} d{depth}");
        for cycle in 0..3000 {
            // The state at the start of the cycle: heads and occupancy.
            let nonempty = int(&ev, "nonempty_o");
            let slots = int(&ev, "has_slot_o");
            for (r, q) in model.iter().enumerate() {
                let at = format!("{what} cycle {cycle} stream {r}");
                assert_eq!(bit(nonempty, r), !q.is_empty(), "{at}: nonempty");
                assert_eq!(bit(slots, r), q.len() < depth as usize, "{at}: slot");
                if let Some(&h) = q.front() {
                    assert_eq!(int(&ev, &format!("s{r}_head_o")), h, "{at}: head");
                }
            }
            // At most one pop, of a nonempty stream; a push where there is
            // room (its slot reserved in the same cycle).
            let pop = (0..streams as usize)
                .filter(|&r| !model[r].is_empty())
                .nth(rng.gen_range(0..=streams as usize))
                .filter(|_| rng.gen_bool(2.0 / 3.0));
            let stream = rng.gen_range(0..streams as usize);
            let push = rng.gen_bool(0.75) && model[stream].len() < depth as usize;
            let data = rng.gen_range(0..1u64 << width);
            ev.set_int("pop_i", pop.map_or(0, |r| 1 << r));
            ev.set_int("push_i", i128::from(push));
            ev.set_int("push_stream_i", stream as i128);
            ev.set_int("push_data_i", i128::from(data));
            ev.set_int("reserve_i", if push { 1 << stream } else { 0 });
            ev.eval();
            assert_eq!(int(&ev, "alarm_o"), 0, "{what} cycle {cycle}: alarm");
            if let Some(r) = pop {
                model[r].pop_front();
            }
            if push {
                model[stream].push_back(data);
            }
            ev.step();
        }
    }
}

#[test]
fn a_push_into_a_full_stream_and_a_double_pop_raise_the_alarm() {
    for depth in [1, 2, 4] {
        let mut ev = queue(2, depth, 8);
        // Stream 1 filled, then pushed once more: the alarm in that cycle
        // or the next (the engine's alarm register keeps it).
        let mut raised = false;
        for k in 0..=depth {
            ev.set_int("push_i", 1);
            ev.set_int("push_stream_i", 1);
            ev.set_int("push_data_i", i128::from(k));
            ev.eval();
            if k < depth {
                assert_eq!(int(&ev, "alarm_o"), 0, "d{depth}: push {k} with room");
            } else {
                raised = int(&ev, "alarm_o") == 1;
            }
            ev.step();
        }
        ev.set_int("push_i", 0);
        ev.eval();
        raised |= int(&ev, "alarm_o") == 1;
        assert!(raised, "d{depth}: a push into a full stream");

        // Two streams popped in one cycle.
        let mut ev = queue(2, depth, 8);
        for s in 0..2 {
            ev.set_int("push_i", 1);
            ev.set_int("push_stream_i", s);
            ev.step();
        }
        ev.set_int("push_i", 0);
        ev.set_int("pop_i", 0b01);
        ev.eval();
        assert_eq!(int(&ev, "alarm_o"), 0, "d{depth}: one pop");
        ev.set_int("pop_i", 0b11);
        ev.eval();
        assert_eq!(int(&ev, "alarm_o"), 1, "d{depth}: two pops in a cycle");
    }
}
