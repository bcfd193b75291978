%% ring: --size processes (1,000) in a ring pass one token N times (10,000,000 hops); the token
%% carries the hops left. Reports hops_per_second (ring built before the clock starts); checks that
%% the process holding the token at the end is the one at position N mod size.
-module(ring).
-export([main/0]).

main() -> bench_peer:run("ring", [{n, 10000000}, {size, 1000}], fun run/1).

run(#{n := N, size := Size, threads := T}) ->
    Main = self(),
    Pids = [spawn(fun() -> ring_node(Main, I) end) || I <- lists:seq(0, Size - 1)],
    [P ! {next, Next} || {P, Next} <- lists:zip(Pids, tl(Pids) ++ [hd(Pids)])],
    T0 = bench_peer:now_ns(),
    hd(Pids) ! {token, N},
    Last = receive {done, I} -> I end,
    Seconds = bench_peer:seconds_since(T0),
    [P ! stop || P <- Pids],
    bench_peer:result("ring", "hops_per_second", "1/s", N / Seconds, #{n => N, size => Size, threads => T}),
    Last =:= N rem Size orelse
        bench_peer:fail("ring", io_lib:format("token ended at ~p, expected ~p", [Last, N rem Size])),
    ok.

ring_node(Main, I) -> receive {next, Next} -> loop(Main, I, Next) end.

loop(Main, I, Next) ->
    receive
        {token, 0} -> Main ! {done, I}, loop(Main, I, Next);
        {token, H} -> Next ! {token, H - 1}, loop(Main, I, Next);
        stop -> ok
    end.
