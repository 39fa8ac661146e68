"""taihu dialects: graph, tile, loop, sw, swsim."""
