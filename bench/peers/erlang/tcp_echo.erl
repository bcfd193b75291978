%% tcp_echo: the peer of bench/grove/tcp_echo.cpp: N connections over 127.0.0.1 (gen_tcp, passive,
%% binary), a process per connection on each side, round trips of 64 bytes; --round_trips in all,
%% spread evenly. Checks every echoed byte. Reports round_trips_per_second.
-module(tcp_echo).
-export([main/0]).

main() -> bench_peer:run("tcp_echo", [{n, 100}, {round_trips, 200000}], fun run/1).

run(#{n := Conns0, round_trips := Total, threads := T}) ->
    Conns = max(1, Conns0),
    Each = max(1, Total div Conns),
    Opts = [binary, {packet, raw}, {active, false}, {nodelay, true}, {reuseaddr, true}],
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}, {backlog, 4096} | Opts]),
    {ok, Port} = inet:port(L),
    spawn_link(fun() -> accept(L, Conns) end),
    Me = self(),
    T0 = bench_peer:now_ns(),
    [spawn_link(fun() -> Me ! {done, client(Port, Each, C)} end) || C <- lists:seq(1, Conns)],
    Bad = lists:sum([receive {done, B} -> B end || _ <- lists:seq(1, Conns)]),
    Seconds = bench_peer:seconds_since(T0),
    case Bad of
        0 -> bench_peer:result("tcp_echo", "round_trips_per_second", "1/s", Each * Conns / Seconds,
                               #{n => Conns0, round_trips => Total, threads => T});
        _ -> bench_peer:fail("tcp_echo", io_lib:format("~p round trips failed", [Bad]))
    end,
    ok.

accept(_L, 0) -> ok;
accept(L, K) ->
    {ok, S} = gen_tcp:accept(L),
    Pid = spawn(fun() -> receive go -> echo(S) end end),
    ok = gen_tcp:controlling_process(S, Pid),
    Pid ! go,
    accept(L, K - 1).

echo(S) ->
    case gen_tcp:recv(S, 64) of
        {ok, B} -> ok = gen_tcp:send(S, B), echo(S);
        {error, _} -> ok
    end.

client(Port, Each, C) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {packet, raw}, {active, false}, {nodelay, true}]),
    Bad = trips(S, Each, C, 0),
    gen_tcp:close(S),
    Bad.

trips(_S, 0, _C, _K) -> 0;
trips(S, Left, C, K) ->
    Out = binary:copy(<<((C + K) band 255)>>, 64),
    case gen_tcp:send(S, Out) of
        ok ->
            case gen_tcp:recv(S, 64) of
                {ok, Out} -> trips(S, Left - 1, C, K + 1);
                _ -> Left
            end;
        _ -> Left
    end.
