%% ping_pong: two processes exchange N round trips (ping, then pong). Reports round_trips_per_second;
%% checks that every pong carried the number of its ping.
-module(ping_pong).
-export([main/0]).

main() -> bench_peer:run("ping_pong", [{n, 1000000}], fun run/1).

run(#{n := N, threads := T}) ->
    Pong = spawn(fun pong/0),
    T0 = bench_peer:now_ns(),
    ping(Pong, 1, N),
    Seconds = bench_peer:seconds_since(T0),
    Pong ! stop,
    bench_peer:result("ping_pong", "round_trips_per_second", "1/s", N / Seconds, #{n => N, threads => T}),
    ok.

ping(_Pong, K, N) when K > N -> ok;
ping(Pong, K, N) ->
    Pong ! {ping, self(), K},
    receive
        {pong, K} -> ping(Pong, K + 1, N);
        {pong, Other} -> bench_peer:fail("ping_pong", io_lib:format("pong ~p for ping ~p", [Other, K]))
    end.

pong() ->
    receive
        {ping, From, K} -> From ! {pong, K}, pong();
        stop -> ok
    end.
