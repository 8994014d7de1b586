module github.com/leaselab/leaselab

go 1.26
