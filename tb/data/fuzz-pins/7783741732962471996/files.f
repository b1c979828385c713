fuzz_child.v
fuzz_cell.v
fuzz_grid_cell.v
fuzz_top.v
