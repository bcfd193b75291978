%% fan_in: --senders processes (16) each send N messages (250,000) to one receiver, which counts and
%% sums them. Reports messages_per_second over all senders * N messages, from the first spawn to
%% the last message received; checks the count and the sum.
-module(fan_in).
-export([main/0]).

main() -> bench_peer:run("fan_in", [{n, 250000}, {senders, 16}], fun run/1).

run(#{n := N, senders := S, threads := T}) ->
    Main = self(),
    Total = S * N,
    T0 = bench_peer:now_ns(),
    Receiver = spawn(fun() -> receive_loop(Main, Total, 0, 0) end),
    [spawn(fun() -> send_loop(Receiver, 1, N) end) || _ <- lists:seq(1, S)],
    {Count, Sum} = receive {done, C, Su} -> {C, Su} end,
    Seconds = bench_peer:seconds_since(T0),
    bench_peer:result("fan_in", "messages_per_second", "1/s", Total / Seconds,
                      #{n => N, senders => S, threads => T}),
    Expected = S * N * (N + 1) div 2,
    {Count, Sum} =:= {Total, Expected} orelse
        bench_peer:fail("fan_in", io_lib:format("got ~p messages summing to ~p, expected ~p and ~p",
                                                [Count, Sum, Total, Expected])),
    ok.

send_loop(_R, K, N) when K > N -> ok;
send_loop(R, K, N) -> R ! {msg, K}, send_loop(R, K + 1, N).

receive_loop(Main, Total, Total, Sum) -> Main ! {done, Total, Sum};
receive_loop(Main, Total, Count, Sum) ->
    receive {msg, K} -> receive_loop(Main, Total, Count + 1, Sum + K) end.
