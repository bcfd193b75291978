%% skynet: a 10-ary tree of processes with N leaves (1,000,000 by default; 1,111,111 processes in
%% all); each leaf sends its number to its parent, each parent sends the sum of its children up.
%% Checks the root's sum against N*(N-1)/2 (499999500000 for N = 1M). Reports seconds.
-module(skynet).
-export([main/0]).

main() -> bench_peer:run("skynet", [{n, 1000000}, {'div', 10}], fun run/1).

run(#{n := N, 'div' := Div, threads := T}) ->
    is_power(N, Div) orelse bench_peer:fail("skynet", "--n must be a power of --div"),
    Self = self(),
    T0 = bench_peer:now_ns(),
    spawn(fun() -> skynet(Self, 0, N, Div) end),
    Sum = receive {sum, S} -> S end,
    Seconds = bench_peer:seconds_since(T0),
    Expected = N * (N - 1) div 2,
    bench_peer:result("skynet", "seconds", "s", Seconds, #{n => N, 'div' => Div, threads => T, sum => Sum}),
    Sum =:= Expected orelse bench_peer:fail("skynet", io_lib:format("sum ~p, expected ~p", [Sum, Expected])),
    ok.

skynet(Parent, Num, 1, _Div) ->
    Parent ! {sum, Num};
skynet(Parent, Num, Size, Div) ->
    Self = self(),
    Sub = Size div Div,
    [spawn(fun() -> skynet(Self, Num + I * Sub, Sub, Div) end) || I <- lists:seq(0, Div - 1)],
    Parent ! {sum, collect(Div, 0)}.

collect(0, Sum) -> Sum;
collect(K, Sum) -> receive {sum, S} -> collect(K - 1, Sum + S) end.

is_power(1, _) -> true;
is_power(N, D) when N rem D =:= 0 -> is_power(N div D, D);
is_power(_, _) -> false.
