module @topk_gather attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<6xi64>) -> (tensor<12xf32>, tensor<12xi64>, tensor<3xi64>, tensor<12xf32>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<3x4xf32>
    %2 = "stablehlo.reshape"(%arg1) : (tensor<6xi64>) -> tensor<3x2xi64>
    // #0 sort
    %3 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<3x4xi64>
    %14:2 = "stablehlo.sort"(%1, %3) ({
      ^bb0(%r4: tensor<f32>, %r5: tensor<f32>, %r6: tensor<i64>, %r7: tensor<i64>):
        %8 = "stablehlo.compare"(%r4, %r4) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %9 = "stablehlo.compare"(%r5, %r5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %10 = "stablehlo.not"(%9) : (tensor<i1>) -> tensor<i1>
        %11 = "stablehlo.and"(%8, %10) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %12 = "stablehlo.compare"(%r4, %r5) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %13 = "stablehlo.or"(%11, %12) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        "stablehlo.return"(%13) : (tensor<i1>) -> ()
    }) {dimension = 1 : i64, is_stable = true} : (tensor<3x4xf32>, tensor<3x4xi64>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
    // #1 argreduce
    %15 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<3x4xi64>
    %16 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %17 = "stablehlo.constant"() {value = dense<9223372036854775807> : tensor<i64>} : () -> tensor<i64>
    %41:2 = "stablehlo.reduce"(%1, %15, %16, %17) ({
      ^bb0(%r18: tensor<f32>, %r19: tensor<i64>, %r20: tensor<f32>, %r21: tensor<i64>):
        %22 = "stablehlo.compare"(%r18, %r18) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %23 = "stablehlo.compare"(%r20, %r20) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %24 = "stablehlo.not"(%22) : (tensor<i1>) -> tensor<i1>
        %25 = "stablehlo.not"(%23) : (tensor<i1>) -> tensor<i1>
        %26 = "stablehlo.and"(%24, %25) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %27 = "stablehlo.not"(%23) : (tensor<i1>) -> tensor<i1>
        %28 = "stablehlo.and"(%22, %27) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %29 = "stablehlo.compare"(%r18, %r20) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %30 = "stablehlo.and"(%26, %29) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %31 = "stablehlo.or"(%28, %30) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %32 = "stablehlo.and"(%22, %23) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %33 = "stablehlo.compare"(%r18, %r20) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %34 = "stablehlo.and"(%26, %33) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %35 = "stablehlo.or"(%32, %34) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %36 = "stablehlo.compare"(%r19, %r21) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
        %37 = "stablehlo.and"(%35, %36) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %38 = "stablehlo.or"(%31, %37) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %39 = "stablehlo.select"(%38, %r18, %r20) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %40 = "stablehlo.select"(%38, %r19, %r21) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
        "stablehlo.return"(%39, %40) : (tensor<f32>, tensor<i64>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<3x4xf32>, tensor<3x4xi64>, tensor<f32>, tensor<i64>) -> (tensor<3xf32>, tensor<3xi64>)
    // #2 gather_axis
    %42 = "stablehlo.constant"() {value = dense<0> : tensor<3x2xi64>} : () -> tensor<3x2xi64>
    %43 = "stablehlo.compare"(%2, %42) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi1>
    %44 = "stablehlo.constant"() {value = dense<4> : tensor<3x2xi64>} : () -> tensor<3x2xi64>
    %45 = "stablehlo.add"(%2, %44) : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
    %46 = "stablehlo.select"(%43, %45, %2) : (tensor<3x2xi1>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
    %47 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x2x1xi64>
    %48 = "stablehlo.reshape"(%46) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %49 = "stablehlo.concatenate"(%47, %48) {dimension = 2 : i64} : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
    %50 = "stablehlo.gather"(%1, %49) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>} : (tensor<3x4xf32>, tensor<3x2x2xi64>) -> tensor<3x2xf32>
    // #3 scatter_axis
    %51 = "stablehlo.constant"() {value = dense<0> : tensor<3x2xi64>} : () -> tensor<3x2xi64>
    %52 = "stablehlo.compare"(%2, %51) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi1>
    %53 = "stablehlo.constant"() {value = dense<4> : tensor<3x2xi64>} : () -> tensor<3x2xi64>
    %54 = "stablehlo.add"(%2, %53) : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
    %55 = "stablehlo.select"(%52, %54, %2) : (tensor<3x2xi1>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
    %56 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x2x1xi64>
    %57 = "stablehlo.reshape"(%55) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %58 = "stablehlo.concatenate"(%56, %57) {dimension = 2 : i64} : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
    %62 = "stablehlo.scatter"(%1, %58, %50) ({
      ^bb0(%r59: tensor<f32>, %r60: tensor<f32>):
        %61 = "stablehlo.add"(%r59, %r60) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%61) : (tensor<f32>) -> ()
    }) {indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, unique_indices = false} : (tensor<3x4xf32>, tensor<3x2x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    %63 = "stablehlo.reshape"(%14#0) : (tensor<3x4xf32>) -> tensor<12xf32>
    %64 = "stablehlo.reshape"(%14#1) : (tensor<3x4xi64>) -> tensor<12xi64>
    %65 = "stablehlo.reshape"(%62) : (tensor<3x4xf32>) -> tensor<12xf32>
    "func.return"(%63, %64, %41#1, %65) : (tensor<12xf32>, tensor<12xi64>, tensor<3xi64>, tensor<12xf32>) -> ()
  }
}
