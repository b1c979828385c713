// Formal properties of the ICI link layer, on the pair of link ends and
// serdes stubs that `gen --block ici` emits (instantiated here as
// `ICI_PAIR, defined by the runner). The generated Verilog is not edited:
// this wrapper drives the pair's ports and observes its outputs, so the
// results are about the RTL users get.
//
// The solver's free inputs: both clients' valid and ready in every cycle,
// and the stubs' scripted errors in every cycle, both directions: any drops,
// any duplicates, and any flip mask of at most three bits per word (below
// the Hamming distance of the frame CRC, so within what the CRC promises to
// detect; the random injection is switched off). By default each client
// sends flits numbered 0, 1, 2, ... (mod 256) in its payload.
//
// Narrowings the runner (tb/tests/ici_formal.rs) may define, each of which
// loses no behaviour of the link for these properties:
//   ICI_FLIP_BIT=n  flips only ever touch bit n of a word. Every flip mask
//                   of the full model yields a word the CRC rejects, and the
//                   receiver uses nothing of a rejected word but the fact,
//                   so one flippable bit reaches every behaviour of the link.
//   ICI_ONE_WAY     B's client sends nothing: A -> B carries data, B -> A
//                   carries ACKs, credits, NAKs and Train frames (all still
//                   under errors). The link ends are the same module, so
//                   this loses no logic, only the interleaving of the two.
//   ICI_WOLPER      marked flits instead of numbered ones (data
//                   independence, after Wolper): each client sends payload 0
//                   except for at most two flits the solver marks, the first
//                   with payload 1 and the second with 2. The link never
//                   looks at a payload (it stores, moves and CRCs it, and
//                   whether the CRC check rejects a word with a flip mask of
//                   up to three bits does not depend on the word: the check
//                   is affine, see the runner's CRC test), so any loss,
//                   duplication, reordering or alteration of some flit in
//                   some run shows up, in a run with the same choices, as
//                   one of a marked flit: a marked flit delivered twice, the
//                   second before the first, one never sent, or one not 0,
//                   1 or 2. Only marks are tracked (2 bits per direction),
//                   not 8-bit flit numbers, which is what lets an unbounded
//                   proof close.
//   ICI_A_TO_B      only the properties of direction A -> B are asserted,
//                   and B's payloads are 0 (B's data matters to none of
//                   them, see above). The pair is symmetric (same link
//                   module, same stub, errors free on both lanes, the
//                   seeds unused), so the same holds for B -> A.
//   ICI_CUT_CRC     the runner disconnects each receiver's rx_crc_ok (its
//                   CRC check) and drives it with "the stub did not flip
//                   this word". Exact because the lemma ICI_CRC_LEMMA
//                   holds in every reachable state: ici_crc_lemma.sv proves
//                   it in two parts (every sent word is sealed; a stub fed
//                   sealed words delivers each to a check that passes it
//                   exactly when unflipped).
//   ICI_CRC_LEMMA   also asserts that lemma (the runner connects the wires
//                   it reads to the stubs' and receivers' signals).
//
// Properties, at both ends (A -> B only with ICI_A_TO_B), in every cycle
// after reset:
//   in_order   numbered flits: a delivered flit carries the number of flits
//              delivered before it (mod 256): nothing lost, duplicated or
//              reordered. Marked flits (ICI_WOLPER): a delivered payload is
//              0, or the next mark in order (1, then 2), already sent;
//   no_overflow the receive buffer never refuses an in-order flit, and holds
//              at most B flits;
//   credits    credits held by the sender + flits accepted but not yet in
//              the peer's buffer + flits in that buffer + freed slots not yet
//              seen by the sender == B (credits are conserved), and the
//              credit counter never over- or underflows.
// They are safety properties, so they are checked both by bounded model
// checking (every trace up to a depth) and, with ABC's pdr, for every
// reachable state (see the runner for which model is proven how).
`default_nettype none

module ici_link_props #(
    parameter integer WORD = 52,
    parameter integer SEQ = 3,
    parameter integer CREDIT = 2,
    parameter integer COUNT = 2,
    parameter integer BUFFER = 2
) (
    input wire clk_i,
    input wire a_tx_valid,
    input wire b_tx_valid,
    input wire a_rx_ready,
    input wire b_rx_ready,
    input wire [WORD-1:0] ab_flip,
    input wire ab_drop,
    input wire ab_dup,
    input wire [WORD-1:0] ba_flip,
    input wire ba_drop,
    input wire ba_dup,
    // Only read with ICI_WOLPER: whether the flit a client offers is marked.
    input wire a_mark,
    input wire b_mark
);
  reg init = 1'b1;
  always @(posedge clk_i) init <= 1'b0;

  // At most three bits: clearing the lowest set bit three times leaves 0.
  function automatic at_most_three(input [WORD-1:0] x);
    reg [WORD-1:0] y;
    begin
      y = x & (x - 1'b1);
      y = y & (y - 1'b1);
      y = y & (y - 1'b1);
      at_most_three = (y == {WORD{1'b0}});
    end
  endfunction
  always @* begin
    assume (at_most_three(ab_flip));
    assume (at_most_three(ba_flip));
`ifdef ICI_FLIP_BIT
    assume ((ab_flip & ~({{(WORD-1){1'b0}}, 1'b1} << `ICI_FLIP_BIT)) == {WORD{1'b0}});
    assume ((ba_flip & ~({{(WORD-1){1'b0}}, 1'b1} << `ICI_FLIP_BIT)) == {WORD{1'b0}});
`endif
`ifdef ICI_ONE_WAY
    assume (!b_tx_valid);
`endif
`ifdef ICI_CLEAN_LINES
    // Only for the wrap claims (ICI_REACH_WRAP), which need a trace, not
    // every trace: one without a drop, duplicate or flip is a trace of the
    // full model too, and the solver finds it in far fewer steps.
    assume (ab_flip == {WORD{1'b0}} && !ab_drop && !ab_dup);
    assume (ba_flip == {WORD{1'b0}} && !ba_drop && !ba_dup);
`endif
  end

  wire a_tx_ready, b_tx_ready, a_rx_valid, b_rx_valid;
  wire [7:0] a_rx_data, b_rx_data;
  wire [SEQ-1:0] a_next, b_next, a_expected, b_expected;
  wire [CREDIT-1:0] a_freed, b_freed, a_remote_freed, b_remote_freed;
  wire [COUNT-1:0] a_credits, b_credits, a_count, b_count;
  wire a_overflow, b_overflow, a_credit_error, b_credit_error;
  wire a_link_up;
  wire [31:0] a_timeouts;

  // Whether the word in each stub's line (the receiver's next des_word)
  // was flipped on its way in: any flip mask is nonzero.
  reg ab_flipped = 1'b0, ba_flipped = 1'b0;
  always @(posedge clk_i) begin
    ab_flipped <= |ab_flip;
    ba_flipped <= |ba_flip;
  end
`ifdef ICI_CUT_CRC
  // What the runner connects to each receiver's rx_crc_ok in place of its
  // CRC check (ICI_CUT_CRC): not flipped. The lemma (ICI_CRC_LEMMA, proven
  // in ici_crc_lemma.sv) says the check computes exactly that whenever a
  // word arrives.
  (* keep *) wire b_crc_cut = !ab_flipped;
  (* keep *) wire a_crc_cut = !ba_flipped;
`endif
  reg [7:0] a_sent = 8'd0, b_sent = 8'd0, a_got = 8'd0, b_got = 8'd0;
  // The payloads the clients send.
  wire [7:0] a_data, b_data;
`ifdef ICI_WOLPER
  // Marked flits A sent (a_marks) and B received from A (b_seen), and the
  // same the other way: 0..2.
  reg [1:0] a_marks = 2'd0, b_marks = 2'd0, a_seen = 2'd0, b_seen = 2'd0;
  assign a_data = (a_mark && a_marks != 2'd2) ? {6'd0, a_marks + 2'd1} : 8'd0;
`ifdef ICI_A_TO_B
  assign b_data = 8'd0;
`else
  assign b_data = (b_mark && b_marks != 2'd2) ? {6'd0, b_marks + 2'd1} : 8'd0;
`endif
  always @(posedge clk_i) begin
    if (init) begin
      a_marks <= 2'd0;
      b_marks <= 2'd0;
      a_seen <= 2'd0;
      b_seen <= 2'd0;
    end else begin
      if (a_tx_valid && a_tx_ready && a_data != 8'd0) a_marks <= a_marks + 2'd1;
      if (b_tx_valid && b_tx_ready && b_data != 8'd0) b_marks <= b_marks + 2'd1;
      if (b_rx_valid && b_rx_ready && b_rx_data != 8'd0) b_seen <= b_seen + 2'd1;
      if (a_rx_valid && a_rx_ready && a_rx_data != 8'd0) a_seen <= a_seen + 2'd1;
    end
  end
`else
  assign a_data = a_sent;
  assign b_data = b_sent;
`endif
  `ICI_PAIR dut (
      .clk_i(clk_i),
      .rst_i(init),
      .seed_i(64'd0),
      .seed_load_i(1'b0),
      .flip_threshold_i(24'd0),
      .drop_threshold_i(24'd0),
      .dup_threshold_i(24'd0),
      .a_tx_valid_i(a_tx_valid),
      .a_tx_data_i(a_data),
      .a_tx_last_i(a_data[0]),
      .a_tx_len_i(1'b0),
      .a_tx_ready_o(a_tx_ready),
      .a_rx_ready_i(a_rx_ready),
      .a_rx_valid_o(a_rx_valid),
      .a_rx_data_o(a_rx_data),
      .a_rx_last_o(),
      .a_rx_len_o(),
      .b_tx_valid_i(b_tx_valid),
      .b_tx_data_i(b_data),
      .b_tx_last_i(b_data[0]),
      .b_tx_len_i(1'b0),
      .b_tx_ready_o(b_tx_ready),
      .b_rx_ready_i(b_rx_ready),
      .b_rx_valid_o(b_rx_valid),
      .b_rx_data_o(b_rx_data),
      .b_rx_last_o(),
      .b_rx_len_o(),
      .ab_force_flip_i(ab_flip),
      .ab_force_drop_i(ab_drop),
      .ab_force_dup_i(ab_dup),
      .ab_words_o(),
      .ab_dropped_o(),
      .ab_duplicated_o(),
      .ab_corrupted_o(),
      .ba_force_flip_i(ba_flip),
      .ba_force_drop_i(ba_drop),
      .ba_force_dup_i(ba_dup),
      .ba_words_o(),
      .ba_dropped_o(),
      .ba_duplicated_o(),
      .ba_corrupted_o(),
      .a_link_up_o(a_link_up),
      .a_flits_sent_o(),
      .a_flits_received_o(),
      .a_crc_errors_o(),
      .a_retransmits_o(),
      .a_naks_sent_o(),
      .a_naks_received_o(),
      .a_timeouts_o(a_timeouts),
      .a_link_downs_o(),
      .a_tx_next_seq_o(a_next),
      .a_tx_credits_o(a_credits),
      .a_tx_remote_freed_o(a_remote_freed),
      .a_rx_expected_seq_o(a_expected),
      .a_rx_freed_o(a_freed),
      .a_rx_count_o(a_count),
      .a_rx_overflow_o(a_overflow),
      .a_credit_error_o(a_credit_error),
      .b_link_up_o(),
      .b_flits_sent_o(),
      .b_flits_received_o(),
      .b_crc_errors_o(),
      .b_retransmits_o(),
      .b_naks_sent_o(),
      .b_naks_received_o(),
      .b_timeouts_o(),
      .b_link_downs_o(),
      .b_tx_next_seq_o(b_next),
      .b_tx_credits_o(b_credits),
      .b_tx_remote_freed_o(b_remote_freed),
      .b_rx_expected_seq_o(b_expected),
      .b_rx_freed_o(b_freed),
      .b_rx_count_o(b_count),
      .b_rx_overflow_o(b_overflow),
      .b_credit_error_o(b_credit_error)
  );

  always @(posedge clk_i) begin
    if (init) begin
      a_sent <= 8'd0;
      b_sent <= 8'd0;
      a_got <= 8'd0;
      b_got <= 8'd0;
    end else begin
      if (a_tx_valid && a_tx_ready) a_sent <= a_sent + 8'd1;
      if (b_tx_valid && b_tx_ready) b_sent <= b_sent + 8'd1;
      if (b_rx_valid && b_rx_ready) b_got <= b_got + 8'd1;
      if (a_rx_valid && a_rx_ready) a_got <= a_got + 8'd1;
    end
  end

  // Credits of one direction: sender X, receiver Y.
  function automatic [7:0] credit_sum(input [COUNT-1:0] credits, input [SEQ-1:0] next,
                                      input [SEQ-1:0] expected, input [COUNT-1:0] count,
                                      input [CREDIT-1:0] freed, input [CREDIT-1:0] seen);
    reg [SEQ-1:0] in_flight;
    reg [CREDIT-1:0] returning;
    begin
      in_flight = next - expected;
      returning = freed - seen;
      credit_sum = credits + in_flight + count + returning;
    end
  endfunction

`ifdef ICI_CRC_LEMMA
  // The lemma that makes ICI_CUT_CRC exact: whenever a word arrives, the
  // receiver's CRC check (rx_crc_ok) passes it exactly when the stub did
  // not flip it. The runner connects these wires to the stubs' line valid
  // registers and the receivers' rx_crc_ok. (It holds because every word a
  // link end sends is sealed, the stub's copy for duplicates is one of them,
  // and the CRC rejects every mask of one to three bits.)
  (* keep *) wire ab_line_valid, ba_line_valid, a_crc_ok, b_crc_ok;
  always @* begin
    if (!init) begin
      assert (!ab_line_valid || b_crc_ok == !ab_flipped);
      assert (!ba_line_valid || a_crc_ok == !ba_flipped);
    end
  end
`endif
  always @* begin
    if (!init) begin
      // in_order
`ifdef ICI_WOLPER
      if (b_rx_valid && b_rx_data != 8'd0)
        assert (b_rx_data == {6'd0, b_seen + 2'd1} && b_seen < a_marks);
`ifndef ICI_A_TO_B
      if (a_rx_valid && a_rx_data != 8'd0)
        assert (a_rx_data == {6'd0, a_seen + 2'd1} && a_seen < b_marks);
`endif
`elsif ICI_NO_ORDER
`else
      if (b_rx_valid) assert (b_rx_data == b_got);
      if (a_rx_valid) assert (a_rx_data == a_got);
`endif
      // no_overflow
      assert (!b_overflow && b_count <= BUFFER);
      // credits
      assert (credit_sum(a_credits, a_next, b_expected, b_count, b_freed, a_remote_freed) == BUFFER);
      assert (!a_credit_error);
`ifndef ICI_A_TO_B
      assert (!a_overflow && a_count <= BUFFER);
      assert (credit_sum(b_credits, b_next, a_expected, a_count, a_freed, b_remote_freed) == BUFFER);
      assert (!b_credit_error);
`endif
    end
  end

`ifdef ICI_REACH
  // Not a property of the link: a claim the solver must refute with a
  // trace, showing the depth reaches a replay timeout, a link-down,
  // retraining, and a delivery once A is back up.
  reg a_was_down = 1'b0;
  always @(posedge clk_i)
    a_was_down <= !init && (a_was_down || (!a_link_up && a_timeouts != 32'd0));
  always @* if (!init) assert (!(a_was_down && a_link_up && b_rx_valid && b_rx_ready));
`endif
`ifdef ICI_REACH_WRAP
  // Likewise: B takes a fifth flit, so A's sequence numbers, B's expected
  // one and B's freed-credit count (all 2 bits in the formal configuration)
  // have wrapped around.
`ifdef ICI_WOLPER
  // With marked flits: after both marked ones.
  always @* if (!init) assert (!(b_rx_valid && b_rx_ready && b_got == 8'd4 && b_seen == 2'd2));
`else
  always @* if (!init) assert (!(b_rx_valid && b_rx_ready && b_got == 8'd4));
`endif
`endif
endmodule

`default_nettype wire
