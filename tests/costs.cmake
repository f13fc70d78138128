# tests/costs.cmake - what the longest tests cost, in seconds (the slower of
# the ASan and release runs of 2026-11-29, after the stream fix), as their
# COST property. ctest -j runs tests in descending cost, but learns the costs
# only from a previous run (Testing/Temporary/CTestCostData.txt), which a
# fresh CI checkout has not: without these, a long test drawn last ran alone
# at the end while the other job idled. Only the order matters, not the
# figures: update them when a test's time changes by much.
set(SLUICE_TEST_COSTS
    ui/scale=95 server-cluster/crash=63 server/crash=62 server-pg/crash=60 ui/pages=57
    server-cluster/api=45 ui/dashboard=43 store/sqlite_bench=34 ui/rules=32
    server-cluster/history=31 server-pg/api=30 shared/cluster_script=28
    integrations/github_action=26 shared/faults_smoke_tls=24 shared/faults_smoke=24
    lint/cppcheck=23 cli/run=23 shared/failover=22 cli/commands=21 server/api=20
    server-pg/event_scan=20 server-pg/history=19 cli/argo=19 soak/short=18
    server/event_scan=16 bench/run-tls-short=16 server-cluster/scheduling=13 cli/limits=13
    bench/run-short=13 server/history=12 server-cluster/errors=12
    server-cluster/auth_matrix=12 engine/model=12 cli/rules=12 bench/load-scale-short=12
    ui/tls=11 server-cluster/client_gone=11 server-cluster/bad_input=11 python/client=11
    cli/acquire=11 server/cluster_tls=10 client/client=10)

# Sets COST on the tests of the calling directory that the table names
# (set_tests_properties reaches only the current directory's tests): each
# tests/*/CMakeLists.txt calls it last.
function(sluice_test_costs)
    get_property(here DIRECTORY PROPERTY TESTS)
    foreach(entry IN LISTS SLUICE_TEST_COSTS)
        string(REGEX MATCH "^(.*)=([0-9]+)$" _ "${entry}")
        if(CMAKE_MATCH_1 IN_LIST here)
            set_tests_properties(${CMAKE_MATCH_1} PROPERTIES COST ${CMAKE_MATCH_2})
        endif()
    endforeach()
endfunction()
