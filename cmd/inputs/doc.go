// Package inputs holds "solar inputs": questions about resources' input
// values that span resources, such as where a value comes from
// ("solar inputs backtrack"). It renders what package resources computes.
package inputs
