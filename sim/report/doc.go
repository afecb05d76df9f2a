// Package report presents the simulator's results (package sim): the
// comparison table and the unfinished pipelines under it (WriteTable,
// WriteUnfinished), one CSV row per pipeline (WriteCSV), the tenant
// queues' fairness table (WriteFairness), the policy suite's table and
// verdict (WriteSuite), and charts: the Gantt chart of every worker on
// every node as SVG or PNG (WriteGantt, WritePNG) and each queue's GPUs
// over the run (WriteQueueChart).
//
// It only reads what a run produced; every figure it shows is computed by
// package sim. The golden files in testdata (the tables of small
// scenarios and the suite's figures, suite.golden) are its output; the
// scenarios and traces they are run on live in sim/testdata.
package report
