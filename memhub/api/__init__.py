"""The gRPC face of the hub: conversion, servicers, status mapping, server assembly."""
