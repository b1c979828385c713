// Hand-written reference for the benchmark (tb/benches/systole.rs, table
// "reference"): a plain 16x16 output-stationary int8 systolic array, written
// the way a hobbyist would write it in Verilog-2005, with flat vectors and a
// generate loop. It is not part of Systole and is only simulated, never
// checked: its job is to give the generated MXU top a yardstick of the same
// array size under the same Verilator release and options.
//
// Each cycle, column c of the top edge takes b_row_i[8c+7:8c] and row r of
// the left edge a_col_i[8r+7:8r]; operands move one PE down (b) and right (a)
// per cycle, and every PE adds a*b to its own 32-bit accumulator. clear_i
// zeroes the accumulators; acc_sel_i picks the PE whose sum is on acc_o.

module os_array_int8_16x16 (
  input  wire         clk_i,
  input  wire         rst_i,
  input  wire         clear_i,
  input  wire [127:0] a_col_i,
  input  wire [127:0] b_row_i,
  input  wire [7:0]   acc_sel_i,
  output wire [31:0]  acc_o
);

  localparam N = 16;

  // Operand registers of every PE, PE (r, c) at index r*N + c. Those of the
  // right column (a) and the bottom row (b) have no reader.
  /* verilator lint_off UNUSEDSIGNAL */
  reg [8*N*N-1:0]  a_q;
  reg [8*N*N-1:0]  b_q;
  /* verilator lint_on UNUSEDSIGNAL */
  reg [32*N*N-1:0] acc_q;

  genvar r, c;
  generate
    for (r = 0; r < N; r = r + 1) begin : row
      for (c = 0; c < N; c = c + 1) begin : col
        wire signed [7:0] a_in;
        wire signed [7:0] b_in;
        wire signed [15:0] prod;
        if (c == 0) begin : left
          assign a_in = a_col_i[8*r +: 8];
        end else begin : inner_a
          assign a_in = a_q[8*(r*N + c - 1) +: 8];
        end
        if (r == 0) begin : top
          assign b_in = b_row_i[8*c +: 8];
        end else begin : inner_b
          assign b_in = b_q[8*((r - 1)*N + c) +: 8];
        end
        assign prod = a_in * b_in;
        always @(posedge clk_i) begin
          if (rst_i) begin
            a_q[8*(r*N + c) +: 8] <= 8'd0;
            b_q[8*(r*N + c) +: 8] <= 8'd0;
            acc_q[32*(r*N + c) +: 32] <= 32'd0;
          end else begin
            a_q[8*(r*N + c) +: 8] <= a_in;
            b_q[8*(r*N + c) +: 8] <= b_in;
            if (clear_i)
              acc_q[32*(r*N + c) +: 32] <= 32'd0;
            else
              acc_q[32*(r*N + c) +: 32] <= acc_q[32*(r*N + c) +: 32] + {{16{prod[15]}}, prod};
          end
        end
      end
    end
  endgenerate

  assign acc_o = acc_q[32*acc_sel_i +: 32];

endmodule
