%% dist_send: Erlang's side of bench/grove/dist_send.cpp (the same protocol, the same flags).
%%   erl -name erl_sink_K@127.0.0.1 -setcookie grove_bench -noshell -pa EBIN -s dist_send sink
%%   erl -name erl_sender_K@127.0.0.1 -setcookie grove_bench -noshell -pa EBIN -s dist_send main \
%%       -extra --id K --peer_erlang 0|1 --mode 0|1 --payload B --n N
%% mode 0: N messages {m, Payload} to a counter on the sink, which answers {done, N} after the last
%% (messages_per_second); mode 1: N round trips of {self(), Payload} through an echo process
%% (round_trips_per_second). Payload 0: the integer 42; B > 0: a binary of B bytes.
-module(dist_send).
-export([main/0, sink/0]).

sink() ->
    register(sink, spawn(fun sink_loop/0)),
    io:format("sink up~n").

sink_loop() ->
    receive
        {start, From, 0, N} -> From ! {ready, spawn(fun() -> count(From, N, N) end)};
        {start, From, 1, _N} -> From ! {ready, spawn(fun echo/0)};
        _ -> ok
    end,
    sink_loop().

count(From, 0, N) -> From ! {done, N};
count(From, K, N) -> receive _ -> count(From, K - 1, N) end.

echo() ->
    receive
        {From, P} when is_pid(From) -> From ! P, echo();
        _ -> ok
    end.

main() ->
    bench_peer:run("dist_send", [{id, 0}, {peer_erlang, 1}, {mode, 0}, {payload, 0}, {n, 200000}, {sink, 0}], fun run/1).

run(#{id := Id, peer_erlang := PE, mode := Mode, payload := B, n := N} = Flags) ->
    Peer = list_to_atom(lists:flatten(io_lib:format("~s_sink_~p@127.0.0.1", [case PE of 1 -> "erl"; 0 -> "grove" end, Id]))),
    wait_for(Peer, 300),
    Payload = case B of 0 -> 42; _ -> binary:copy(<<"x">>, B) end,
    {sink, Peer} ! {start, self(), Mode, N},
    Worker = receive {ready, W} -> W after 30000 -> bench_peer:fail("dist_send", "the sink did not answer") end,
    T0 = bench_peer:now_ns(),
    case Mode of
        0 ->
            Msg = {m, Payload},
            [Worker ! Msg || _ <- lists:seq(1, N)],
            receive {done, N} -> ok after 600000 -> bench_peer:fail("dist_send", "no done") end;
        1 ->
            Msg = {self(), Payload},
            rtt(Worker, Msg, N),
            Worker ! stop
    end,
    Seconds = bench_peer:seconds_since(T0),
    Metric = case Mode of 0 -> "messages_per_second"; 1 -> "round_trips_per_second" end,
    Extra = (maps:remove(threads, Flags))#{threads => erlang:system_info(schedulers)},
    bench_peer:result("dist_send", Metric, "1/s", N / Seconds, Extra),
    ok.

rtt(_W, _Msg, 0) -> ok;
rtt(W, Msg, K) -> W ! Msg, receive _ -> rtt(W, Msg, K - 1) end.

wait_for(Peer, 0) -> bench_peer:fail("dist_send", io_lib:format("no sink ~p", [Peer]));
wait_for(Peer, K) ->
    case net_adm:ping(Peer) of
        pong -> ok;
        pang -> timer:sleep(100), wait_for(Peer, K - 1)
    end.
