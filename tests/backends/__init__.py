"""Tests of the cluster and cloud backends."""
