// The CRC lemma the two-way proof of ici_link_props.sv rests on (its
// ICI_CUT_CRC model), proven in two parts on the generated modules:
//
//   ici_crc_lemma_tx    every word a link end sends (ser_word_o, in any
//                       state, for any inputs) is sealed: CHECK accepts it.
//   ici_crc_lemma_line  a stub fed only sealed words, with flip masks of at
//                       most three bits, delivers each word to a receiver
//                       whose CRC check (the link end's own rx_crc_ok, in any
//                       state) passes it exactly when the stub flipped no
//                       bit of it. What makes this inductive: the word the
//                       stub keeps for a duplicate is sealed too.
//
// In the pair each stub's input is the sending link end's ser_word_o, so
// the first part discharges the second's assumption, and together they are
// the lemma: each receiver's rx_crc_ok equals "not flipped" whenever a word
// arrives, in every reachable state. CHECK is the generated check the
// runner emits from the same frame CRC code as the link (`ICI_CHECK`); it
// only names "sealed" between the two parts, so its own correctness is not
// assumed. The runner defines ICI_LINK, ICI_STUB and ICI_CHECK (module
// names) and connects the wires marked "runner" after flattening.

module ici_crc_lemma_tx #(
    parameter WORD = 26
) (
    input wire clk_i
);
  wire [WORD-1:0] word;
  wire sealed;
  `ICI_LINK link (
      .clk_i(clk_i),
      .ser_word_o(word)
  );
  `ICI_CHECK check (
      .word_i(word),
      .ok_o(sealed)
  );
  always @* assert (sealed);
endmodule

module ici_crc_lemma_line #(
    parameter WORD = 26
) (
    input wire clk_i,
    input wire rst_i,
    input wire [WORD-1:0] in_word_i,
    input wire [WORD-1:0] flip_i,
    input wire drop_i,
    input wire dup_i
);
  function automatic at_most_three(input [WORD-1:0] x);
    reg [WORD-1:0] y;
    begin
      y = x;
      y = y & (y - 1'b1);
      y = y & (y - 1'b1);
      y = y & (y - 1'b1);
      at_most_three = (y == {WORD{1'b0}});
    end
  endfunction

  // The stub's word for duplicates and whether it has one, and the
  // receiver's CRC check (runner).
  (* keep *) wire [WORD-1:0] last_word;
  (* keep *) wire have_last;
  (* keep *) wire rx_crc_ok;
  wire in_sealed, last_sealed, out_valid;
  wire [WORD-1:0] out_word;
  `ICI_CHECK check_in (
      .word_i(in_word_i),
      .ok_o(in_sealed)
  );
  `ICI_CHECK check_last (
      .word_i(last_word),
      .ok_o(last_sealed)
  );
  `ICI_STUB stub (
      .clk_i(clk_i),
      .rst_i(rst_i),
      .in_word_i(in_word_i),
      .seed_load_i(1'b0),
      .seed_i(64'd0),
      .flip_threshold_i(24'd0),
      .drop_threshold_i(24'd0),
      .dup_threshold_i(24'd0),
      .force_flip_i(flip_i),
      .force_drop_i(drop_i),
      .force_dup_i(dup_i),
      .in_ready_o(),
      .out_valid_o(out_valid),
      .out_word_o(out_word),
      .words_o(),
      .dropped_o(),
      .duplicated_o(),
      .corrupted_o()
  );
  `ICI_LINK rx (
      .clk_i(clk_i),
      .rst_i(rst_i),
      .des_valid_i(out_valid),
      .des_word_i(out_word)
  );

  reg init = 1'b1;
  reg flipped = 1'b0;
  always @(posedge clk_i) begin
    init <= 1'b0;
    flipped <= |flip_i;
  end
  always @* begin
    if (init) assume (rst_i);
    assume (at_most_three(flip_i));
    assume (in_sealed);
    if (!init) begin
      assert (!have_last || last_sealed);
      assert (!out_valid || rx_crc_ok == !flipped);
    end
  end
endmodule
