module grove/bench/peers/go

go 1.19
