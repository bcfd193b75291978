%% restarts: crash-and-restart cycles per second, N cycles (--n; the harness runs 1,000 and 100,000).
%%
%% 1. restarts_per_second: an OTP supervisor, one_for_one with intensity 1,000,000,000 per 1 s (it
%%    never gives up), over one permanent worker whose start function spawn_links a process that
%%    exits with reason `crash` at once. Every start counts itself; the clock runs from starting the
%%    supervisor until the (N+1)-th start (the first start plus N restarts). The supervisor keeps
%%    every restart of the last second in a list and scans it on each restart: that cost is OTP's
%%    and is part of what is measured. Logging is switched off (logger level none), so neither the
%%    supervisor's child_terminated report nor a crash report is formatted.
%% 2. bare_restarts_per_second: the same cycle without OTP: a process that traps exits spawn_links
%%    the crashing worker, waits for its {'EXIT', Pid, crash} and starts the next one, N times.
-module(restarts).
-export([main/0, start_worker/2, init/1]).

main() -> bench_peer:run("restarts", [{n, 1000}], fun run/1).

run(#{n := N, threads := T}) ->
    logger:set_primary_config(level, none),
    Extra = #{n => N, threads => T},
    {SupSeconds, Starts} = supervised(N),
    bench_peer:result("restarts", "restarts_per_second", "1/s", N / SupSeconds, Extra),
    Starts >= N + 1 orelse bench_peer:fail("restarts", "too few starts"),
    {BareSeconds, Cycles} = bare(N),
    bench_peer:result("restarts", "bare_restarts_per_second", "1/s", N / BareSeconds, Extra),
    Cycles =:= N orelse bench_peer:fail("restarts", "wrong number of bare cycles"),
    ok.

supervised(N) ->
    Counter = atomics:new(1, []),
    Self = self(),
    T0 = bench_peer:now_ns(),
    {ok, Sup} = supervisor:start_link(?MODULE, {Counter, {Self, N + 1}}),
    receive {starts, N1} -> ok end,
    Seconds = bench_peer:seconds_since(T0),
    unlink(Sup),
    exit(Sup, kill),
    {Seconds, N1}.

init({Counter, Notify}) ->
    Worker = #{id => worker, start => {?MODULE, start_worker, [Counter, Notify]},
               restart => permanent, shutdown => brutal_kill, type => worker},
    {ok, {#{strategy => one_for_one, intensity => 1000000000, period => 1}, [Worker]}}.

%% The child's start function: counts the start, then starts a process that crashes at once.
start_worker(Counter, {Notify, Target}) ->
    case atomics:add_get(Counter, 1, 1) of
        Target -> Notify ! {starts, Target};
        _ -> ok
    end,
    {ok, spawn_link(fun() -> exit(crash) end)}.

bare(N) ->
    Self = self(),
    Loop = spawn(fun() ->
                         process_flag(trap_exit, true),
                         T0 = bench_peer:now_ns(),
                         Cycles = bare_loop(N, 0),
                         Self ! {bare, bench_peer:seconds_since(T0), Cycles}
                 end),
    receive {bare, Seconds, Cycles} -> ok end,
    exit(Loop, kill),
    {Seconds, Cycles}.

bare_loop(0, Cycles) -> Cycles;
bare_loop(K, Cycles) ->
    Pid = spawn_link(fun() -> exit(crash) end),
    receive {'EXIT', Pid, crash} -> bare_loop(K - 1, Cycles + 1) end.
