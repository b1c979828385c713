//! The measurement harness: a top module with four pins around a block.
//!
//! An MXU has hundreds of ports (a 4x4 int8 array: 81 input and 133 output
//! bits), more than a small package has pins, and place and route must put
//! every top-level port on a pin. The harness shifts all block inputs in
//! through one pin (`sin_i`) and loads all block outputs into a shift register
//! read out through another (`load_i`, `sout_o`), so every input and output
//! bit stays live (nothing is optimised away) and every path to and from the
//! block starts or ends at a flip-flop, so Fmax measures the block's own
//! register-to-register paths. Its cost, one flip-flop per port bit plus a
//! 2:1 multiplexer per output bit and an XOR per input bit, is reported with
//! every result.
//!
//! Each link of the input chain loads the link before it XOR `load_i`. A
//! plain shift chain's link k + 1 loads bit k, exactly like a block register
//! sampling the input on bit k, and Yosys merges equal flip-flops: the
//! block's input registers (and the skew lines behind them) became links of
//! the harness's chain, placed along it (int8 MXU 16x16 on the ECP5-85F: an
//! input register 11.8 ns of routing from the multiplier it feeds). With the
//! XOR no block register equals a link. (A shift enable would do as well
//! but puts `load_i` on every link's clock enable, which constrains how the
//! links pack into slices: the ICI link's `fmax` build placed at 88.2 MHz
//! with it, 105.2 with the XOR.)

use hw::{Dir, ModuleDef};
use std::fmt::Write;

/// The harness top module's name.
pub const TOP: &str = "fpga_top";

/// One port of the wrapped block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub name: String,
    pub input: bool,
    pub width: u32,
}

/// The ports of `module`, in declaration order (clock and reset first), from
/// its definition.
pub fn ports(module: &ModuleDef) -> Vec<Port> {
    module
        .port_list()
        .into_iter()
        .map(|(name, dir, ty)| Port {
            name,
            input: dir == Dir::In,
            width: ty.width,
        })
        .collect()
}

/// Bits the harness shifts in and out: (inputs, outputs), clock and reset excluded.
pub fn shift_bits(ports: &[Port]) -> (u32, u32) {
    let inputs = ports
        .iter()
        .filter(|p| p.input && !is_clock_or_reset(p))
        .map(|p| p.width)
        .sum();
    let outputs = ports.iter().filter(|p| !p.input).map(|p| p.width).sum();
    (inputs, outputs)
}

fn is_clock_or_reset(p: &Port) -> bool {
    p.name == "clk_i" || p.name == "rst_i"
}

/// The harness module around `block` (whose ports are `ports`; it must have
/// `clk_i`, and `rst_i` if it has a reset).
pub fn harness(block: &str, ports: &[Port]) -> Result<String, String> {
    if !ports
        .iter()
        .any(|p| p.input && p.name == "clk_i" && p.width == 1)
    {
        return Err(format!("{block} has no 1-bit clk_i input"));
    }
    let (n_in, n_out) = shift_bits(ports);
    let (n_in, n_out) = (n_in.max(1), n_out.max(1));
    let mut v = String::new();
    let _ = writeln!(
        v,
        "// Measurement harness around {block}: inputs shifted in on sin_i (each link\n\
         // XOR load_i, so no block register equals a link), outputs loaded (load_i)\n\
         // into a shift register read out on sout_o.\n\
         `default_nettype none\n\n\
         module {TOP} (\n  input  wire clk_i,\n  input  wire rst_i,\n  input  wire sin_i,\n  \
         input  wire load_i,\n  output wire sout_o\n);\n"
    );
    let _ = writeln!(v, "  reg rst_q;");
    let _ = writeln!(v, "  reg [{}:0] in_q;", n_in - 1);
    let _ = writeln!(v, "  reg [{}:0] out_q;", n_out - 1);
    let _ = writeln!(v, "  wire [{}:0] out_w;", n_out - 1);
    let shift_in = if n_in == 1 {
        "sin_i".to_string()
    } else {
        format!("{{in_q[{}:0], sin_i}}", n_in - 2)
    };
    let shift_out = if n_out == 1 {
        "1'b0".to_string()
    } else {
        format!("{{out_q[{}:0], 1'b0}}", n_out - 2)
    };
    let _ = writeln!(
        v,
        "\n  always @(posedge clk_i) begin\n    rst_q <= rst_i;\n    \
         in_q <= {shift_in} ^ {{{n_in}{{load_i}}}};\n    \
         out_q <= load_i ? out_w : {shift_out};\n  end\n  assign sout_o = out_q[{}];\n",
        n_out - 1
    );
    if ports.iter().all(|p| p.input) {
        let _ = writeln!(v, "  assign out_w = 1'b0;");
    }
    let mut conns = Vec::new();
    let (mut i, mut o) = (0u32, 0u32);
    for p in ports {
        let expr = if p.name == "clk_i" {
            "clk_i".to_string()
        } else if p.name == "rst_i" {
            "rst_q".to_string()
        } else if p.input {
            let e = format!("in_q[{}:{}]", i + p.width - 1, i);
            i += p.width;
            e
        } else {
            let e = format!("out_w[{}:{}]", o + p.width - 1, o);
            o += p.width;
            e
        };
        conns.push(format!("    .{}({})", p.name, expr));
    }
    let _ = writeln!(v, "  {block} block (\n{}\n  );", conns.join(",\n"));
    let _ = writeln!(v, "\nendmodule\n\n`default_nettype wire");
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::{ModuleBuilder, Ty};

    /// `m`: clock, reset, inputs a_i (32 bits) and b_i (8, signed), outputs
    /// c_o (1) and d_o (128).
    fn module() -> ModuleDef {
        let mut m = ModuleBuilder::new("m");
        let a = m.input("a_i", Ty::new(32, false));
        let b = m.input("b_i", Ty::new(8, true));
        let r = m.reg_reset("r", Ty::new(32, false), 0);
        m.set_next(r, a);
        m.output("c_o", b.trunc(1));
        m.output("d_o", r.q().zext(128));
        m.finish()
    }

    #[test]
    fn reads_ports_and_counts_shift_bits() {
        let p = ports(&module());
        assert_eq!(p.len(), 6);
        assert_eq!(
            p[2],
            Port {
                name: "a_i".into(),
                input: true,
                width: 32
            }
        );
        assert_eq!(p[3].width, 8);
        assert_eq!(shift_bits(&p), (40, 129));
        let h = harness("m", &p).unwrap();
        assert!(h.contains(".a_i(in_q[31:0])"), "{h}");
        assert!(h.contains(".b_i(in_q[39:32])"), "{h}");
        assert!(h.contains(".d_o(out_w[128:1])"), "{h}");
        assert!(h.contains(".rst_i(rst_q)"), "{h}");
        assert!(
            h.contains("in_q <= {in_q[38:0], sin_i} ^ {40{load_i}};"),
            "{h}"
        );
    }

    #[test]
    fn refuses_a_block_without_clock() {
        let p = vec![Port {
            name: "x".into(),
            input: true,
            width: 1,
        }];
        assert!(harness("m", &p).is_err());
    }
}
