%% timers: N processes (100,000) each sleep a pseudo-random 1..1000 ms (`receive after`), all spawned
%% first by one parent; each measures its lateness (actual wake - intended wake, where intended =
%% its own start + its sleep) and sends it to a collector. Reports late_p50_ms, late_p99_ms and
%% late_max_ms (nearest-rank percentiles). The sleeps come from the LCG in bench/README.md:
%% x := x * 6364136223846793005 + 1442695040888963407 mod 2^64, ms := 1 + (x >> 33) rem 1000,
%% x starting at --seed, one step per process in spawn order.
-module(timers).
-export([main/0]).

-define(MASK, 16#FFFFFFFFFFFFFFFF).

main() -> bench_peer:run("timers", [{n, 100000}, {seed, 42}], fun run/1).

run(#{n := N, seed := Seed, threads := T}) ->
    Self = self(),
    Collector = spawn(fun() -> collect(Self, N, []) end),
    SumMs = spawn_all(N, Seed, Collector, 0),
    Late = receive {late, L} -> L end,
    length(Late) =:= N orelse bench_peer:fail("timers", "collector got the wrong count"),
    Sorted = list_to_tuple(lists:sort(Late)),
    Extra = #{n => N, seed => Seed, threads => T, sum_ms => SumMs},
    [bench_peer:result("timers", M, "ms", rank(Sorted, Q, N) / 1000, Extra)
     || {M, Q} <- [{"late_p50_ms", 0.50}, {"late_p99_ms", 0.99}, {"late_max_ms", 1.0}]],
    ok.

%% Nearest rank: the ceil(Q*N)-th smallest (1-based).
rank(Sorted, Q, N) -> element(max(1, ceil(Q * N)), Sorted).

%% Returns the sum of all sleeps (50035349 for seed 42 and N = 100,000), reported as a check.
spawn_all(0, _X, _C, SumMs) -> SumMs;
spawn_all(I, X0, C, SumMs) ->
    X = (X0 * 6364136223846793005 + 1442695040888963407) band ?MASK,
    Ms = 1 + (X bsr 33) rem 1000,
    spawn(fun() -> sleeper(C, Ms) end),
    spawn_all(I - 1, X, C, SumMs + Ms).

sleeper(Collector, Ms) ->
    T0 = erlang:monotonic_time(microsecond),
    receive after Ms -> ok end,
    Collector ! {late, erlang:monotonic_time(microsecond) - T0 - Ms * 1000}.

collect(Main, 0, Acc) -> Main ! {late, Acc};
collect(Main, K, Acc) -> receive {late, L} -> collect(Main, K - 1, [L | Acc]) end.
