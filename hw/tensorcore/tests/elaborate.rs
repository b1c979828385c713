//! Every preset elaborates to its top module.

use hw::{Block, Design};

#[test]
fn presets_elaborate() {
    for p in tensorcore::TensorCore.presets() {
        let mut design = Design::new();
        let top = tensorcore::TensorCore.elaborate(&mut design, &p.config);
        assert_eq!(top.name, tensorcore::top_name(&p.config));
    }
}
