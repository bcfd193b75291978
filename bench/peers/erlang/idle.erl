%% idle: N processes (100,000) parked in `receive` with no timer; once all have run, wait --settle
%% seconds (1), then report the CPU time (utime + stime of the whole OS process) used over
%% --seconds (5) of wall time in which nothing happens: cpu_seconds. Then halts.
-module(idle).
-export([main/0]).

main() -> bench_peer:run("idle", [{n, 100000}, {seconds, 5}, {settle, 1}], fun run/1).

run(#{n := N, seconds := Secs, settle := Settle, threads := T}) ->
    Counter = atomics:new(1, []),
    Self = self(),
    Before = erlang:system_info(process_count),
    [spawn(fun() -> parked(Counter, Self, N) end) || _ <- lists:seq(1, N)],
    receive all_alive -> ok end,
    Alive = erlang:system_info(process_count) - Before,
    Alive =:= N orelse bench_peer:fail("idle", io_lib:format("~p alive, expected ~p", [Alive, N])),
    timer:sleep(Settle * 1000),
    Cpu0 = bench_peer:cpu_seconds(),
    W0 = bench_peer:now_ns(),
    timer:sleep(Secs * 1000),
    Cpu = round((bench_peer:cpu_seconds() - Cpu0) * 100) / 100,  % whole ticks
    Wall = bench_peer:seconds_since(W0),
    bench_peer:result("idle", "cpu_seconds", "s", Cpu,
                      #{n => N, seconds => Secs, settle => Settle, threads => T, wall_seconds => Wall}),
    ok.

parked(Counter, Parent, N) ->
    case atomics:add_get(Counter, 1, 1) of
        N -> Parent ! all_alive;
        _ -> ok
    end,
    receive stop -> ok end.
