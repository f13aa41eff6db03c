module @checked_index_select attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<2xi32>) -> (tensor<6xf32>, tensor<2xi64>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<4x3xf32>
    // #0 index_select
    %2 = "stablehlo.convert"(%arg1) : (tensor<2xi32>) -> tensor<2xi64>
    %3 = "stablehlo.constant"() {value = dense<-4> : tensor<2xi64>} : () -> tensor<2xi64>
    %4 = "stablehlo.compare"(%2, %3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %5 = "stablehlo.constant"() {value = dense<4> : tensor<2xi64>} : () -> tensor<2xi64>
    %6 = "stablehlo.compare"(%2, %5) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %7 = "stablehlo.or"(%4, %6) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
    %8 = "stablehlo.constant"() {value = dense<-9223372036854775808> : tensor<2xi64>} : () -> tensor<2xi64>
    %9 = "stablehlo.select"(%7, %2, %8) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %10 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %14 = "stablehlo.reduce"(%7, %10) ({
      ^bb0(%r11: tensor<i1>, %r12: tensor<i1>):
        %13 = "stablehlo.or"(%r11, %r12) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        "stablehlo.return"(%13) : (tensor<i1>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xi1>, tensor<i1>) -> tensor<i1>
    %15 = "stablehlo.constant"() {value = dense<-9223372036854775808> : tensor<i64>} : () -> tensor<i64>
    %19 = "stablehlo.reduce"(%9, %15) ({
      ^bb0(%r16: tensor<i64>, %r17: tensor<i64>):
        %18 = "stablehlo.maximum"(%r16, %r17) : (tensor<i64>, tensor<i64>) -> tensor<i64>
        "stablehlo.return"(%18) : (tensor<i64>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
    %20 = "stablehlo.constant"() {value = dense<0> : tensor<2xi64>} : () -> tensor<2xi64>
    %21 = "stablehlo.compare"(%2, %20) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %22 = "stablehlo.constant"() {value = dense<4> : tensor<2xi64>} : () -> tensor<2xi64>
    %23 = "stablehlo.add"(%2, %22) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %24 = "stablehlo.select"(%21, %23, %2) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %25 = "stablehlo.reshape"(%24) : (tensor<2xi64>) -> tensor<2x1xi64>
    %26 = "stablehlo.gather"(%1, %25) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>} : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
    %27 = "stablehlo.reshape"(%26) : (tensor<2x3xf32>) -> tensor<6xf32>
    // checks
    %28 = "stablehlo.convert"(%14) : (tensor<i1>) -> tensor<i64>
    %29 = "stablehlo.reshape"(%28) : (tensor<i64>) -> tensor<1xi64>
    %30 = "stablehlo.reshape"(%19) : (tensor<i64>) -> tensor<1xi64>
    %31 = "stablehlo.concatenate"(%29, %30) {dimension = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    "func.return"(%27, %31) : (tensor<6xf32>, tensor<2xi64>) -> ()
  }
}
