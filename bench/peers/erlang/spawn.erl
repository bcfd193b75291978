%% spawn: N processes that each wait one hour in `receive after` (each holds a pending timer, as in
%% the classic BEAM process-creation test). Reports spawn_seconds (until every child has run and
%% counted itself), alive (erlang:system_info(process_count)) and bytes_per_process (VmRSS growth / N).
%% Then halts without waiting for the hour.
-module(spawn).
-export([main/0]).

main() -> bench_peer:run("spawn", [{n, 1000000}], fun run/1).

run(#{n := N, threads := T}) ->
    Counter = atomics:new(1, []),
    Self = self(),
    Before = erlang:system_info(process_count),
    Rss0 = bench_peer:rss_bytes(),
    T0 = bench_peer:now_ns(),
    spawn_all(N, Counter, Self, N),
    receive all_alive -> ok end,
    Seconds = bench_peer:seconds_since(T0),
    Rss1 = bench_peer:rss_bytes(),
    Alive = erlang:system_info(process_count),
    Extra = #{n => N, threads => T},
    bench_peer:result("spawn", "spawn_seconds", "s", Seconds, Extra),
    bench_peer:result("spawn", "alive", "processes", Alive, Extra#{baseline => Before}),
    bench_peer:result("spawn", "bytes_per_process", "B", (Rss1 - Rss0) / N, Extra),
    Alive - Before =:= N orelse
        bench_peer:fail("spawn", io_lib:format("~p processes alive, expected ~p + ~p", [Alive, N, Before])),
    ok.

spawn_all(0, _, _, _) -> ok;
spawn_all(I, Counter, Parent, N) ->
    spawn(fun() -> child(Counter, Parent, N) end),
    spawn_all(I - 1, Counter, Parent, N).

child(Counter, Parent, N) ->
    %% The child that brings the count to N tells the parent; no other message is sent.
    case atomics:add_get(Counter, 1, 1) of
        N -> Parent ! all_alive;
        _ -> ok
    end,
    receive after 3600000 -> ok end.
